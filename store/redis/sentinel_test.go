package redis

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/storecluster"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// TestSentinel runs the store over Redis with a replica behind three Sentinels
// (storecluster.StartRedis), one cluster for its subtests, which run in order: each leaves
// the cluster whole (a primary, its replica in sync).
func TestSentinel(t *testing.T) {
	c := startSentinels(t)
	t.Run("Conformance", func(t *testing.T) {
		s := openSentinel(t, sentinelURL(t, c, nil))
		storetest.Run(t, func(*testing.T) store.Store { return s })
	})
	t.Run("CredentialsNotShown", func(t *testing.T) { testSentinelCredentials(t, c) })
	t.Run("WaitReplicas", func(t *testing.T) { testWaitReplicas(t, c) })
	t.Run("WatchFollowsPrimary", func(t *testing.T) { testWatchFollowsPrimary(t, c) })
	t.Run("Election", func(t *testing.T) { testElection(t, c) })
	t.Run("LostWrites", func(t *testing.T) { testLostWrites(t, c, nil) })
	t.Run("LostTakeover", func(t *testing.T) { testLostTakeover(t, c) })
	t.Run("LostWritesWaitReplicas", func(t *testing.T) {
		testLostWrites(t, c, map[string]string{"wait_replicas": "1", "wait_timeout": "50ms"})
	})
}

// testSentinelCredentials: credentials the Sentinels (which have none) or the servers refuse
// fail Open with a configuration error that shows neither the URL's password nor the
// Sentinels' (T4, N2); go-redis's log lines are checked by TestMain.
func testSentinelCredentials(t *testing.T, c *storecluster.RedisCluster) {
	pw := filepath.Join(t.TempDir(), "sentinel-pw")
	if err := os.WriteFile(pw, []byte("sen-hunter2secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, params := range map[string]map[string]string{
		"sentinel":                   {"sentinel_user": "nosuchuser", "sentinel_password_file": pw},
		"server":                     {},
		"server, password in a file": {"password_file": pw},
	} {
		raw := sentinelURL(t, c, params)
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword("nosuchuser", "pw-hunter2secret")
		if params["password_file"] != "" {
			u.User = url.User("nosuchuser")
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		s, err := Open(ctx, u.String())
		cancel()
		if err == nil {
			s.Close()
			t.Errorf("%s: Open with refused credentials succeeded", name)
			continue
		}
		t.Logf("%s: %v", name, err)
		if strings.Contains(err.Error(), "hunter2secret") {
			t.Errorf("T4: %s: the error shows a password: %v", name, err)
		}
		if !errors.Is(err, store.ErrConfig) {
			t.Errorf("C7: %s: refused credentials are not a configuration error: %v", name, err)
		}
	}
}

func ready(t *testing.T, c *storecluster.RedisCluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
}

// testWaitReplicas: with wait_replicas=1, a write the replica does not acknowledge within
// wait_timeout (the replica stopped) is an unknown outcome (ErrNotReplicated, no store
// sentinel), though the primary made it; an answer that made no write stays definite.
func testWaitReplicas(t *testing.T, c *storecluster.RedisCluster) {
	ready(t, c)
	s := openSentinel(t, sentinelURL(t, c, map[string]string{"wait_replicas": "1", "wait_timeout": "100ms"}))
	ctx := t.Context()
	if err := s.Create(ctx, "k", map[string]any{"rev": 1}); err != nil {
		t.Fatalf("Create with the replica up: %v", err)
	}
	if err := s.Patch(ctx, "k", map[string]any{"rev": 2}, &store.Condition{Field: "rev", Value: 1}); err != nil {
		t.Fatalf("Patch with the replica up: %v", err)
	}
	p, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	replica := c.Members()[0]
	if replica == p {
		replica = c.Members()[1]
	}
	if err := replica.Pause(); err != nil {
		t.Fatal(err)
	}
	defer replica.Resume()

	start := time.Now()
	err = s.Patch(ctx, "k", map[string]any{"rev": 3}, &store.Condition{Field: "rev", Value: 2})
	took := time.Since(start)
	if !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("Patch with the replica stopped: %v, want ErrNotReplicated", err)
	}
	for _, sentinel := range []error{store.ErrConditionFailed, store.ErrNotFound, store.ErrExists} {
		if errors.Is(err, sentinel) {
			t.Errorf("T7: the unreplicated write's error holds %v: %v", sentinel, err)
		}
	}
	t.Logf("unreplicated Patch: %v after %v", err, took.Round(time.Millisecond))
	if err := s.Create(ctx, "k2", map[string]any{"rev": 1}); !errors.Is(err, ErrNotReplicated) {
		t.Errorf("Create with the replica stopped: %v, want ErrNotReplicated", err)
	}
	// No write, nothing to wait for: the answer is the primary's.
	if err := s.Patch(ctx, "k", map[string]any{"rev": 9}, &store.Condition{Field: "rev", Value: 1}); !errors.Is(err, store.ErrConditionFailed) {
		t.Errorf("Patch on a stale revision with the replica stopped: %v, want ErrConditionFailed", err)
	}
	if err := s.Create(ctx, "k", map[string]any{"rev": 1}); !errors.Is(err, store.ErrExists) {
		t.Errorf("Create of an existing key with the replica stopped: %v, want ErrExists", err)
	}
	if err := replica.Resume(); err != nil {
		t.Fatal(err)
	}
	// The primary made the write: unknown was true, not "failed".
	if doc, err := s.Get(ctx, "k"); err != nil || doc["rev"] != float64(3) {
		t.Errorf("Get after the unreplicated Patch: %v, %v, want rev 3 (on the primary)", doc, err)
	}
	// Once the replica is back, the writes are acknowledged again.
	ready(t, c)
	if err := s.Patch(ctx, "k", map[string]any{"rev": 4}, &store.Condition{Field: "rev", Value: 3}); err != nil {
		t.Errorf("Patch with the replica back: %v", err)
	}
}

// testWatchFollowsPrimary: a watch, watched again after each error as the Elector does, sees
// the writes made after a failover (the old primary demoted) and after the primary's death.
func testWatchFollowsPrimary(t *testing.T, c *storecluster.RedisCluster) {
	ready(t, c)
	raw := sentinelURL(t, c, nil)
	s := openSentinel(t, raw)
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	var mu sync.Mutex
	latest, failures := 0.0, 0
	seen := make(chan struct{}, 1)
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		for ctx.Err() == nil {
			err := store.Watch(ctx, s, "w", func(ch store.Change) {
				if ch.Found {
					mu.Lock()
					latest, _ = ch.Doc["v"].(float64)
					mu.Unlock()
					select {
					case seen <- struct{}{}:
					default:
					}
				}
			})
			if ctx.Err() == nil {
				mu.Lock()
				failures++
				mu.Unlock()
				t.Logf("watch ended: %v", err)
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond): // as an Elector watches again after a while
				}
			}
		}
	}()
	defer func() { cancel(); <-watchDone }()
	write := func(v float64) {
		t.Helper()
		for {
			c, cancel := context.WithTimeout(ctx, time.Second)
			err := s.Patch(c, "w", map[string]any{"v": v}, nil)
			if errors.Is(err, store.ErrNotFound) {
				err = s.Create(c, "w", map[string]any{"v": v})
			}
			cancel()
			if err == nil {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("write %v: %v", v, err)
			}
			time.Sleep(50 * time.Millisecond) // the client finding the new primary
		}
	}
	waitSeen := func(v float64) time.Duration {
		t.Helper()
		start := time.Now()
		for {
			mu.Lock()
			got := latest
			mu.Unlock()
			if got == v {
				return time.Since(start)
			}
			select {
			case <-seen:
			case <-ctx.Done():
				t.Fatalf("the watch never saw v=%v (latest %v)", v, got)
			}
		}
	}
	write(1)
	waitSeen(1)

	// Each phase says how long it took: a slow machine is then told from a stuck cluster.
	phase := time.Now()
	took := func(what string) {
		t.Helper()
		t.Logf("%s took %v", what, time.Since(phase).Round(time.Millisecond))
		phase = time.Now()
	}
	if err := c.Failover(ctx, false); err != nil {
		t.Fatal(err)
	}
	took("Failover(false)")
	write(2)
	t.Logf("after Failover(false): the watch saw the next write %v after it", waitSeen(2).Round(time.Millisecond))

	phase = time.Now()
	ready(t, c)
	took("waiting for the Sentinels to count on the replica")
	old, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitPromoted(ctx, old); err != nil {
		t.Fatal(err)
	}
	took("the promotion after the primary's death")
	write(3)
	t.Logf("after the primary's death: the watch saw the next write %v after it", waitSeen(3).Round(time.Millisecond))
	phase = time.Now()
	if err := c.Rejoin(ctx, old); err != nil {
		t.Fatal(err)
	}
	took("the rejoin of the killed primary")
	mu.Lock()
	defer mu.Unlock()
	if failures < 2 {
		t.Errorf("the watch failed %d times over a failover and a primary's death: it stayed on an old primary", failures)
	}
}

// testElection: three Electors over the Sentinel URL. After a failover (Failover(false)) and
// after the primary's death, an instance leads again within L + R of the promotion (the
// moment the Sentinels name the new primary and it answers as a master); never two at once.
func testElection(t *testing.T, c *storecluster.RedisCluster) {
	ready(t, c)
	el := startElection(t, sentinelURL(t, c, nil))
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	first := el.leading("a first leader", 0, time.Time{})
	t.Logf("%s leads", first.ev.Instance)
	bound := sentinelL + sentinelR + sentinelSlack

	old, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	from := el.mark()
	promoted := promotion(t, c, old)
	start := time.Now()
	if err := c.Failover(ctx, false); err != nil {
		t.Fatal(err)
	}
	at := <-promoted
	s := el.leading("a leader after Failover(false)", from, at)
	if d := s.ev.Time.Sub(at); d > bound {
		t.Errorf("after Failover(false), %s renewed as the leader %v after the promotion, want at most L+R = %v (+ slack)", s.ev.Instance, d, sentinelL+sentinelR)
	}
	t.Logf("Failover(false): promoted %v after it began; %s leads, renewing %v after the promotion (bound L+R+slack = %v)",
		at.Sub(start).Round(time.Millisecond), s.ev.Instance, s.ev.Time.Sub(at).Round(time.Millisecond), bound)

	ready(t, c)
	old, err = c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	from = el.mark()
	promoted = promotion(t, c, old)
	killed := time.Now()
	if err := old.Kill(); err != nil {
		t.Fatal(err)
	}
	at = <-promoted
	s = el.leading("a leader after the primary's death", from, at)
	if d := s.ev.Time.Sub(at); d > bound {
		t.Errorf("after the primary's death, %s renewed as the leader %v after the promotion, want at most L+R = %v (+ slack)", s.ev.Instance, d, sentinelL+sentinelR)
	}
	t.Logf("primary killed: promoted %v after the kill; %s leads, renewing %v after the promotion (bound L+R+slack = %v)",
		at.Sub(killed).Round(time.Millisecond), s.ev.Instance, s.ev.Time.Sub(at).Round(time.Millisecond), bound)
	if err := c.Rejoin(ctx, old); err != nil {
		t.Fatal(err)
	}
	t.Logf("timeline:\n%s", el.timeline())
}

// testLostWrites: Failover(true) without wait_replicas loses the renewals the primary
// acknowledged while the replica was stopped: the record goes back to an older revision, which
// an instance reads or writes on. With wait_replicas=1 no write acknowledged to an instance is
// lost: the leader's renewals fail (ErrNotReplicated) while the replica is stopped, and it
// stops leading. Either way, never two leaders at once, and one leads again after.
func testLostWrites(t *testing.T, c *storecluster.RedisCluster, params map[string]string) {
	ready(t, c)
	el := startElection(t, sentinelURL(t, c, params))
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	lead := el.leading("a first leader", 0, time.Time{})
	from := el.mark()
	start := time.Now()
	if err := c.Failover(ctx, true); err != nil {
		t.Fatal(err)
	}
	done := time.Now()
	after := el.leading("a leader after Failover(true)", from, done)
	el.mu.Lock()
	rollbacks := slices.Clone(el.rollbacks)
	el.mu.Unlock()
	switch {
	case params == nil && len(rollbacks) == 0:
		t.Errorf("no instance read or wrote on a revision an acknowledged renewal had replaced: Failover(true) lost nothing")
	case params != nil && len(rollbacks) > 0:
		t.Errorf("with %v, an acknowledged renewal was lost", params)
	}
	for _, r := range rollbacks {
		t.Logf("rollback: %s %s revision %s at %v, which an acknowledged write had replaced", r.id, r.op, r.rev[:8], r.at.Sub(start).Round(time.Millisecond))
	}
	t.Logf("%s led before; %s leads after, renewing %v after Failover(true) returned (it took %v)",
		lead.ev.Instance, after.ev.Instance, after.ev.Time.Sub(done).Round(time.Millisecond), done.Sub(start).Round(time.Millisecond))
	t.Logf("events from Failover(true) on:\n%s", el.timelineFrom(from))
}

// testLostTakeover: a handover (the leader resigns to another instance, R1, R2) made while
// the replica is stopped, then lost by Failover(true) without wait_replicas, with a lease long
// enough (L = 8s, R = 2s) that the new leader's deadline (E5) outlasts the failover. The record
// goes back to the resigner's, before the request: the new leader's next attempt finds it held
// by the resigner and stops leading; the resigner, which remembers its release, takes it back
// only once its own D has passed since then (R4); the third instance counts the rolled-back
// revision as new (E6). So nobody leads for a while, and never two at once.
func testLostTakeover(t *testing.T, c *storecluster.RedisCluster) {
	ready(t, c)
	const l, r = 8 * time.Second, 2 * time.Second
	el := startElectionTimed(t, sentinelURL(t, c, nil), l, r, 0)
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	first := el.leading("a first leader", 0, time.Time{})
	from, to := first.ev.Instance, "i1"
	if from == "i1" {
		to = "i2"
	}
	var handedAt time.Time
	c.AfterReplicaStopped = func() {
		mark := el.mark()
		var lock cluster.Lock
		for _, in := range el.insts {
			if in.id == from {
				lock = recordingLock{Lock: cluster.NewStoreLock(in.s), el: el, id: "resign"}
			}
		}
		if _, err := cluster.Resign(ctx, lock, el.lease, to); err != nil {
			t.Errorf("Resign: %v", err)
			return
		}
		el.waitFor(to+" taking over", mark, 30*time.Second, func(s sample) bool {
			return s.ev.Instance == to && s.ev.Kind == cluster.BecameLeader
		})
		handedAt = time.Now()
	}
	defer func() { c.AfterReplicaStopped = nil }()
	mark := el.mark()
	if err := c.Failover(ctx, true); err != nil {
		t.Fatal(err)
	}
	done := time.Now()
	stopped := el.waitFor(to+" stopping after the failover", mark, 60*time.Second, func(s sample) bool {
		return s.ev.Instance == to && s.ev.Kind == cluster.StoppedLeading
	})
	again := el.waitFor("a leader after the failover", mark, 60*time.Second, func(s sample) bool {
		return s.ev.Kind == cluster.BecameLeader && s.ev.Time.After(stopped.ev.Time)
	})
	overlaps := el.finish()
	el.mu.Lock()
	rollbacks := len(el.rollbacks)
	el.mu.Unlock()
	t.Logf("%s handed over to %s at %v; Failover(true) returned %v later; %s stopped leading (%s) %v after that; %s led again %v after that (%v after the handover); %d reads or writes on a rolled-back revision; overlaps %v",
		from, to, handedAt.Sub(el.start).Round(time.Millisecond), done.Sub(handedAt).Round(time.Millisecond),
		to, stopped.ev.Reason, stopped.ev.Time.Sub(done).Round(time.Millisecond),
		again.ev.Instance, again.ev.Time.Sub(stopped.ev.Time).Round(time.Millisecond), again.ev.Time.Sub(handedAt).Round(time.Millisecond), rollbacks, overlaps)
	t.Logf("events from the failover on:\n%s", el.timelineFrom(mark))
	if rollbacks == 0 {
		t.Errorf("the handover was not lost")
	}
}
