//go:build unix

package storecluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testenv"
)

// startRedisTest starts the Redis cluster in the test's directory, stopped when the test ends.
func startRedisTest(t *testing.T) *RedisCluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := startRedis(ctx, t.TempDir())
	if errors.Is(err, ErrUnavailable) {
		testenv.Unavailable(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestRedisFailover: the Sentinels name the primary; each kind of failover hands the primary
// to the other data server, and the one that loses writes does lose a write the primary
// acknowledged; a restart keeps the data.
func TestRedisFailover(t *testing.T) {
	c := startRedisTest(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	first, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if first != c.Members()[0] {
		t.Errorf("the first primary is %s, want %s", first.Name, c.Members()[0].Name)
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
	set(first, "kept", "1")
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	if err := c.Failover(ctx, false); err != nil {
		t.Fatal(err)
	}
	second, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if second == first {
		t.Fatalf("Failover(false) left %s the primary", first.Name)
	}
	t.Logf("Failover(false): %v", time.Since(start).Round(time.Millisecond))
	if v := get(second, "kept"); v != "1" {
		t.Errorf("after Failover(false) the new primary holds %v, want 1", v)
	}
	if _, err := respDo(ctx, first.Addr, "SET", "x", "1"); err == nil || !isReadonly(err) {
		t.Errorf("SET on the old primary: %v, want READONLY", err)
	}

	// A write acknowledged once the replica is stopped is lost by Failover(true).
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	lost := make(chan error, 1)
	go func() {
		// Failover stops the replica, then waits for the primary's offset to move.
		time.Sleep(200 * time.Millisecond) // no event to wait for inside Failover
		_, err := respDo(ctx, second.Addr, "SET", "lost", "1")
		lost <- err
	}()
	start = time.Now()
	if err := c.Failover(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := <-lost; err != nil {
		t.Fatalf("the write to lose was refused: %v", err)
	}
	third, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if third != first {
		t.Fatalf("Failover(true) made %s the primary, want %s", third.Name, first.Name)
	}
	t.Logf("Failover(true): %v", time.Since(start).Round(time.Millisecond))
	if v := get(third, "lost"); v != nil {
		t.Errorf("Failover(true): the new primary holds the acknowledged write (%v): nothing was lost", v)
	}
	if v := get(third, "kept"); v != "1" {
		t.Errorf("after Failover(true) the new primary holds kept=%v, want 1", v)
	}

	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v := get(p, "kept"); v != "1" {
		t.Errorf("after Restart the primary %s holds kept=%v, want 1", p.Name, v)
	}
}

func isReadonly(err error) bool {
	var re respError
	return errors.As(err, &re) && len(re) >= 8 && string(re[:8]) == "READONLY"
}

// A primary paused past the Sentinels' down-after: once resumed, Leader may name it while the
// Sentinels fail over. Settle returns only once the cluster is back for good: the primary it
// leaves named keeps being named through the failover timeout, accepts writes, and the other
// server replicates from it.
func TestRedisSettleAfterAPausedPrimary(t *testing.T) {
	c := startRedisTest(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	old, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Pause(); err != nil {
		t.Fatal(err)
	}
	// Paused until a Sentinel flags it down: the failover is then under way or about to be.
	var flagged error
	for flagged == nil {
		if _, flagged = c.settled(ctx); flagged == nil {
			select {
			case <-ctx.Done():
				t.Fatal("the Sentinels never saw the paused primary down")
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	if err := old.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := c.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := c.sentinelPrimary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(redisFailoverTimeout)
	for time.Now().Before(until) {
		got, err := c.settled(ctx)
		if err != nil || got != p {
			t.Fatalf("%v after Settle left %s the primary: settled %v, %v", time.Until(until), p.Name, got, err)
		}
		if role, err := respRole(ctx, c.other(p).Addr); err != nil || role != "slave" {
			t.Fatalf("the other server's role %q, %v; want slave", role, err)
		}
		time.Sleep(redisSettlePoll)
	}
}

// A failover while Rejoin waits, as when a busy machine keeps the primary from answering the
// Sentinels' pings for down-after: the primary is paused as Rejoin starts the killed server,
// until the Sentinels have promoted that server. Rejoin returns once the cluster is whole
// around the primary the Sentinels name then; it does not wait for ever for the rejoined
// server to replicate from the primary they replaced.
func TestRedisRejoinAcrossAFailover(t *testing.T) {
	c := startRedisTest(t)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	old, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Kill(); err != nil {
		t.Fatal(err)
	}
	next, err := c.WaitPromoted(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	if err := next.Pause(); err != nil {
		t.Fatal(err)
	}
	defer next.Resume()
	rejoined := make(chan error, 1)
	start := time.Now()
	go func() { rejoined <- c.Rejoin(ctx, old) }()
	for {
		if p, err := c.sentinelPrimary(ctx); err == nil && p == old {
			break
		}
		select {
		case err := <-rejoined:
			t.Fatalf("Rejoin returned while %s was paused: %v", next.Name, err)
		case <-ctx.Done():
			t.Fatalf("the Sentinels never promoted %s while %s was paused", old.Name, next.Name)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Logf("the Sentinels promoted %s %v after Rejoin began", old.Name, time.Since(start).Round(time.Millisecond))
	if err := next.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := <-rejoined; err != nil {
		t.Fatalf("Rejoin, with a failover meanwhile: %v", err)
	}
	t.Logf("Rejoin returned after %v", time.Since(start).Round(time.Millisecond))
	p, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.replicaOK(ctx, p, c.other(p), true); err != nil {
		t.Errorf("after Rejoin the Sentinels name %s, and %v", p.Name, err)
	}
}

// A killed primary rejoined before any Sentinel has found it down (it has been down for nearly
// down-after): the Sentinels fail over all the same. Rejoin must not start it as the
// primary it was: it would act as a master beside the promoted replica until the Sentinels
// convert it, 8 s after it first reported master, and the primary they name would have no
// replica meanwhile (writes waiting for one, wait_replicas, all failing).
func TestRedisRejoinBeforeTheSentinelsSeeTheKill(t *testing.T) {
	c := startRedisTest(t)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	time.Sleep(3 * time.Second) // the Sentinels meet (hello every 2 s): else no quorum, no failover
	old, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Kill(); err != nil {
		t.Fatal(err)
	}
	// Down for nearly down-after: the Sentinels' pings have gone unanswered, none has found it
	// down yet. (Back at once, it would answer their pings in time: no failover.)
	time.Sleep(redisDownAfter * 9 / 10)
	start := time.Now()
	if err := c.Rejoin(ctx, old); err != nil {
		t.Fatal(err)
	}
	t.Logf("Rejoin took %v", time.Since(start).Round(time.Millisecond))
	// Two masters for longer than the Sentinels take to fail over is the fault.
	var twoSince time.Time
	for until := time.Now().Add(12 * time.Second); time.Now().Before(until); time.Sleep(100 * time.Millisecond) {
		r1, err1 := respRole(ctx, c.members[0].Addr)
		r2, err2 := respRole(ctx, c.members[1].Addr)
		if err1 != nil || err2 != nil || r1 != "master" || r2 != "master" {
			twoSince = time.Time{}
			continue
		}
		if twoSince.IsZero() {
			twoSince = time.Now()
		}
		if d := time.Since(twoSince); d > 3*time.Second {
			t.Fatalf("both servers have acted as masters for %v after Rejoin\n%s", d.Round(time.Millisecond), c.LogTail(30))
		}
	}
}

// A primary and replica that do not start end StartRedis with an error, the servers started so
// far stopped, and no panic.
func TestRedisStartFails(t *testing.T) {
	t.Setenv("LEASEHOLD_REDIS_SERVER_BIN", "/bin/false")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := StartRedis(ctx, t.TempDir()); err == nil {
		t.Fatal("StartRedis with a binary that exits: no error")
	}
}
