//go:build unix

package main

import (
	"errors"
	"testing"

	"github.com/leasehold/leasehold/internal/storecluster"
	"github.com/leasehold/leasehold/internal/testenv"
	redisstore "github.com/leasehold/leasehold/store/redis"
)

// Over a Redis Cluster started for the test (three shards of a primary and a replica): run,
// leader, status, resign and repair of a record that is not JSON (storeCommands).
func TestRedisClusterStore(t *testing.T) {
	c, err := storecluster.StartRedisShards(t.Context(), t.TempDir())
	if errors.Is(err, storecluster.ErrUnavailable) && !testenv.Required() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	url := c.URL(nil, nil)
	put := func(t *testing.T, key string, raw []byte) {
		s, err := redisstore.Open(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.Client().Set(t.Context(), s.Key(key), raw, 0).Err(); err != nil {
			t.Fatalf("set %s: %v", s.Key(key), err)
		}
	}
	storeCommands(t, url, testLs, testRs, put)
}
