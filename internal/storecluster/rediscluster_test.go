//go:build unix

package storecluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testenv"
)

// startRedisShardsTest starts the Redis Cluster in the test's directory, stopped when the test
// ends.
func startRedisShardsTest(t *testing.T) *RedisShards {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	c, err := StartRedisShards(ctx, t.TempDir())
	if errors.Is(err, ErrUnavailable) {
		testenv.Unavailable(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestRedisShards: three primaries own the slots, a clean failover swaps the key's shard's
// primary and replica and keeps a write, the losing one loses a write the old primary
// acknowledged, and no process outlives Close.
func TestRedisShards(t *testing.T) {
	c := startRedisShardsTest(t)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	prim, err := c.Primaries(ctx)
	if err != nil || len(prim) != 3 {
		t.Fatalf("primaries: %v, %v; want 3", prim, err)
	}
	c.Key = "{k}x"
	first, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	set := func(m *Member, k, v string) {
		t.Helper()
		if _, err := respDo(ctx, m.Addr, "SET", k, v); err != nil {
			t.Fatalf("SET %s on %s: %v", k, m.Name, err)
		}
	}
	get := func(m *Member, k string) any {
		t.Helper()
		v, err := respDo(ctx, m.Addr, "GET", k)
		if err != nil {
			t.Fatalf("GET %s on %s: %v", k, m.Name, err)
		}
		return v
	}
	set(first, "{k}kept", "1")
	if _, err := respDo(ctx, first.Addr, "WAIT", "1", "5000"); err != nil {
		t.Fatal(err)
	}
	if err := c.Failover(ctx, false); err != nil {
		t.Fatal(err)
	}
	second, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if second == first {
		t.Fatalf("the clean failover left %s the primary", first.Name)
	}
	if got := get(second, "{k}kept"); got != "1" {
		t.Errorf("after the clean failover {k}kept is %v, want 1", got)
	}
	c.AfterReplicaStopped = func() { set(second, "{k}lost", "1") }
	if err := c.Failover(ctx, true); err != nil {
		t.Fatal(err)
	}
	third, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if third == second {
		t.Fatalf("the losing failover left %s the primary", second.Name)
	}
	if got := get(third, "{k}lost"); got != nil {
		t.Errorf("the losing failover kept {k}lost: %v", got)
	}
	if got := get(third, "{k}kept"); got != "1" {
		t.Errorf("after the losing failover {k}kept is %v, want 1", got)
	}
	c.Close()
	for _, m := range c.Members() {
		if m.Running() {
			t.Errorf("%s runs after Close", m.Name)
		}
	}
}

// TestRedisShardsStartFails: nodes that do not start end StartRedisShards with an error
// wrapping ErrUnavailable, the nodes started so far stopped, no panic.
func TestRedisShardsStartFails(t *testing.T) {
	t.Setenv("LEASEHOLD_REDIS_SERVER_BIN", "/bin/false")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := StartRedisShards(ctx, t.TempDir())
	if !errors.Is(err, ErrUnavailable) || c != nil {
		t.Fatalf("StartRedisShards with a binary that exits: %v, %v; want ErrUnavailable", c, err)
	}
}
