//go:build unix

package main

import (
	"errors"
	"testing"

	"github.com/leasehold/leasehold/internal/storecluster"
	"github.com/leasehold/leasehold/internal/testenv"
	zkstore "github.com/leasehold/leasehold/store/zookeeper"
)

// Over a ZooKeeper server started for the test: run, leader, status, resign and repair of a
// znode that holds no JSON object (storeCommands).
func TestZooKeeperStore(t *testing.T) {
	c, err := storecluster.StartZooKeeper(t.Context(), t.TempDir(), 1)
	if errors.Is(err, storecluster.ErrUnavailable) && !testenv.Required() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	url := c.URL(nil, map[string]string{"chroot": "/cmd-test"})
	put := func(t *testing.T, key string, raw []byte) {
		s, err := zkstore.Open(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		// The record's znode exists (the elections wrote it): its data is replaced whatever its
		// version, as a foreign writer would.
		if _, err := s.Conn().Set(s.Path(key), raw, -1); err != nil {
			t.Fatalf("set %s: %v", s.Path(key), err)
		}
	}
	storeCommands(t, url, testLs, testRs, put)
}
