package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/leasehold/leasehold/internal/storecluster"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
	"github.com/leasehold/leasehold/store/storetest/linearize"
)

// startShards starts a Redis Cluster of three primaries and three replicas in the test's
// directory (storecluster.StartRedisShards).
func startShards(t *testing.T) *storecluster.RedisShards {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	c, err := storecluster.StartRedisShards(ctx, t.TempDir())
	if errors.Is(err, storecluster.ErrUnavailable) {
		testenv.Unavailable(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// shardsURL is the cluster's URL with a key prefix of its own and extra parameters.
func shardsURL(t *testing.T, c *storecluster.RedisShards, params map[string]string) string {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	p := map[string]string{"prefix": "leasehold-test:" + hex.EncodeToString(b) + ":"}
	for k, v := range params {
		p[k] = v
	}
	return c.URL(nil, p)
}

// TestRedisCluster runs the store over a Redis Cluster, one cluster for its subtests, which run
// in order: each leaves the cluster whole (three primaries, each with its replica in sync).
func TestRedisCluster(t *testing.T) {
	c := startShards(t)
	t.Run("Conformance", func(t *testing.T) {
		s := openCluster(t, shardsURL(t, c, nil))
		storetest.Run(t, func(*testing.T) store.Store { return s })
	})
	t.Run("Linearizable", func(t *testing.T) {
		raw := shardsURL(t, c, nil)
		linearize.Run(t, func(t *testing.T) store.Store { return openCluster(t, raw) })
	})
	t.Run("HashTag", func(t *testing.T) { testHashTag(t, c) })
	t.Run("ShardFailover", func(t *testing.T) { testShardFailover(t, c) })
	t.Run("ShardPrimaryKilled", func(t *testing.T) { testShardPrimaryKilled(t, c) })
	t.Run("ReadAfterPrimaryKilled", func(t *testing.T) { testReadAfterPrimaryKilled(t, c) })
	t.Run("ShardLostWrites", func(t *testing.T) { testShardLostWrites(t, c, nil) })
	t.Run("ShardLostWritesWaitReplicas", func(t *testing.T) {
		testShardLostWrites(t, c, map[string]string{"wait_replicas": "1", "wait_timeout": "100ms"})
	})
	t.Run("SlotMigration", func(t *testing.T) { testSlotMigration(t, c) })
}

// settle waits until the cluster is whole again.
func settle(t *testing.T, c *storecluster.RedisShards) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := c.Settle(ctx); err != nil {
		t.Fatal(err)
	}
}

// testHashTag: a record's Redis key holds its key in a hash tag, so that it lands in the slot
// of the key alone; its watch channel is named as the key (same slot); keys on every shard,
// and keys Redis reads no tag from, are written and watched.
func testHashTag(t *testing.T, c *storecluster.RedisShards) {
	s := openCluster(t, shardsURL(t, c, nil))
	cc, ok := s.Client().(*goredis.ClusterClient)
	if !ok {
		t.Fatalf("Client() is a %T, want a *goredis.ClusterClient", s.Client())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	nodes := map[string]bool{}
	keys := []string{"}starts-with-brace", "a{b}c", "x}y"}
	for i := range 12 {
		keys = append(keys, fmt.Sprintf("lease-%d", i))
	}
	for _, k := range keys {
		rkey := s.Key(k)
		if want := s.Prefix() + "{" + k + "}"; rkey != want {
			t.Errorf("Key(%q) = %q, want %q", k, rkey, want)
		}
		got, err := cc.ClusterKeySlot(ctx, rkey).Result()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(k, "}") {
			tag, _, _ := strings.Cut(k, "}")
			if want, err := cc.ClusterKeySlot(ctx, tag).Result(); err != nil || got != want {
				t.Errorf("the slot of %q is %d, want %d, the slot of %q (%v)", rkey, got, want, tag, err)
			}
		}
		if ch := s.b.watchChannel(rkey); ch != rkey {
			t.Errorf("the watch channel of %q is %q, want the key's name (its slot)", rkey, ch)
		}
		node, _, err := s.b.nodeFor(ctx, rkey)
		if err != nil {
			t.Fatal(err)
		}
		nodes[node] = true
	}
	if len(nodes) != 3 {
		t.Errorf("the keys are on %d primaries, want 3: %v", len(nodes), nodes)
	}
	// Every key watched at once, from one store (three sharded subscriptions), then written.
	var wg sync.WaitGroup
	wctx, wcancel := context.WithCancel(ctx)
	defer func() { wcancel(); wg.Wait() }()
	seen := make(chan string, 4*len(keys))
	for _, k := range keys {
		wg.Go(func() {
			err := store.Watch(wctx, s, k, func(ch store.Change) {
				if ch.Found && ch.Doc["v"] == k {
					select {
					case seen <- k:
					default: // the test writes again until it has seen every key
					}
				}
			})
			if wctx.Err() == nil {
				t.Errorf("watch of %q ended: %v", k, err)
			}
		})
	}
	for _, k := range keys {
		if err := s.Create(ctx, k, map[string]any{"v": "x"}); err != nil {
			t.Fatalf("Create %q: %v", k, err)
		}
	}
	// Each watch has its first state once a write after it is seen: write until all are seen.
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for len(want) > 0 {
		for k := range want {
			if err := s.Patch(ctx, k, map[string]any{"v": k}, nil); err != nil {
				t.Fatalf("Patch %q: %v", k, err)
			}
		}
		select {
		case k := <-seen:
			delete(want, k)
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("the watches of %v saw no write", want)
		}
	}
	// The script published on the sharded channel: a raw sharded subscriber sees a write.
	ps := cc.SSubscribe(ctx, s.Key("lease-0"))
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Patch(ctx, "lease-0", map[string]any{"v": "raw"}, nil); err != nil {
		t.Fatal(err)
	}
	msg, err := ps.ReceiveMessage(ctx)
	if err != nil || msg.Payload != `{"v":"raw"}` {
		t.Errorf("sharded subscriber of %q: %v, %v; want the new document", s.Key("lease-0"), msg, err)
	}
}

// retryWrite makes a conditional write until it succeeds, as an Elector tries again every R;
// an answer that the condition failed ends it: the write was made by an attempt whose outcome
// was unknown (T7) when rev is already new.
func retryWrite(ctx context.Context, t *testing.T, s *Store, key string, from, to float64) {
	t.Helper()
	for {
		c, cancel := context.WithTimeout(ctx, time.Second)
		err := s.Patch(c, key, map[string]any{"rev": to}, &store.Condition{Field: "rev", Value: from})
		cancel()
		if err == nil {
			return
		}
		if errors.Is(err, store.ErrConditionFailed) {
			doc, gerr := s.Get(ctx, key)
			if gerr == nil && doc["rev"] == to {
				return
			}
			t.Fatalf("Patch %s rev %v→%v: %v (now %v, %v)", key, from, to, err, doc, gerr)
		}
		if ctx.Err() != nil {
			t.Fatalf("Patch %s rev %v→%v: %v", key, from, to, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond): // the client learning the new primary
		}
	}
}

// watchLatest watches key, again after each error as an Elector does, and reports each rev
// seen on the returned channel until the test ends.
func watchLatest(t *testing.T, s *Store, key string) <-chan float64 {
	ctx, cancel := context.WithCancel(t.Context())
	revs := make(chan float64, 100)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			err := store.Watch(ctx, s, key, func(ch store.Change) {
				if rev, ok := ch.Doc["rev"].(float64); ch.Found && ok {
					select {
					case revs <- rev:
					default:
					}
				}
			})
			if ctx.Err() == nil {
				t.Logf("watch ended: %v", err)
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}()
	return revs
}

func waitRev(ctx context.Context, t *testing.T, revs <-chan float64, want float64) {
	t.Helper()
	for {
		select {
		case r := <-revs:
			if r == want {
				return
			}
		case <-ctx.Done():
			t.Fatalf("the watch never saw rev %v", want)
		}
	}
}

// testShardFailover: CLUSTER FAILOVER of the record's shard; the record keeps its writes, a
// conditional write succeeds on the new primary, and the watch, watched again, sees it.
func testShardFailover(t *testing.T, c *storecluster.RedisShards) {
	settle(t, c)
	s := openCluster(t, shardsURL(t, c, nil))
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	if err := s.Create(ctx, "f", map[string]any{"rev": 1.0}); err != nil {
		t.Fatal(err)
	}
	revs := watchLatest(t, s, "f")
	retryWrite(ctx, t, s, "f", 1, 2)
	waitRev(ctx, t, revs, 2)
	c.Key = s.Key("f")
	before, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Failover(ctx, false); err != nil {
		t.Fatal(err)
	}
	after, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after == before {
		t.Fatalf("the shard's primary is still %s", before.Name)
	}
	if doc, err := s.Get(ctx, "f"); err != nil || doc["rev"] != 2.0 {
		t.Errorf("Get after the failover: %v, %v; want rev 2", doc, err)
	}
	start := time.Now()
	retryWrite(ctx, t, s, "f", 2, 3)
	t.Logf("written on the new primary %v after the failover", time.Since(start).Round(time.Millisecond))
	waitRev(ctx, t, revs, 3)
	t.Logf("seen by the watch %v after the failover", time.Since(start).Round(time.Millisecond))
}

// testShardPrimaryKilled: the record's primary is killed; the cluster promotes its replica,
// the store's writes reach it, and the watch sees them; the killed node rejoins as a replica.
func testShardPrimaryKilled(t *testing.T, c *storecluster.RedisShards) {
	settle(t, c)
	s := openCluster(t, shardsURL(t, c, nil))
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	if err := s.Create(ctx, "k", map[string]any{"rev": 1.0}); err != nil {
		t.Fatal(err)
	}
	revs := watchLatest(t, s, "k")
	retryWrite(ctx, t, s, "k", 1, 2)
	waitRev(ctx, t, revs, 2)
	c.Key = s.Key("k")
	old, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// WAIT: the write is on the replica, so the promotion keeps it.
	node, err := s.Client().(*goredis.ClusterClient).MasterForKey(ctx, s.Key("k"))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := node.Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT: %d, %v", n, err)
	}
	if err := old.Kill(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	retryWrite(ctx, t, s, "k", 2, 3)
	t.Logf("written on the promoted replica %v after the kill", time.Since(start).Round(time.Millisecond))
	waitRev(ctx, t, revs, 3)
	t.Logf("seen by the watch %v after the kill", time.Since(start).Round(time.Millisecond))
	if err := c.Rejoin(ctx, old); err != nil {
		t.Fatal(err)
	}
	if now, err := c.Leader(ctx); err != nil || now == old {
		t.Errorf("after the rejoin the primary is %v (%v), want the promoted replica", now, err)
	}
	retryWrite(ctx, t, s, "k", 3, 4)
	waitRev(ctx, t, revs, 4)
}

// testReadAfterPrimaryKilled: once the cluster has promoted the replica of a killed primary,
// the next Get answers, though the client sent nothing to the shard meanwhile: the failed
// read has the client read the slots again and goes to the new primary (reroute.go). Without
// that, the client keeps the dead primary's address until a minute has passed, and every read
// of the shard fails.
func testReadAfterPrimaryKilled(t *testing.T, c *storecluster.RedisShards) {
	settle(t, c)
	s := openCluster(t, shardsURL(t, c, nil))
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	if err := s.Create(ctx, "read-k", map[string]any{"rev": 1.0}); err != nil {
		t.Fatal(err)
	}
	c.Key = s.Key("read-k")
	old, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node, err := s.Client().(*goredis.ClusterClient).MasterForKey(ctx, s.Key("read-k"))
	if err != nil {
		t.Fatal(err)
	}
	if node.Options().Addr != old.Addr {
		t.Fatalf("the client sends the key to %s, the cluster says %s", node.Options().Addr, old.Addr)
	}
	if n, err := node.Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT: %d, %v", n, err)
	}
	if err := old.Kill(); err != nil {
		t.Fatal(err)
	}
	// Until the running nodes agree on another primary of the slot: the promoted replica.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var now *storecluster.Member
	for now == nil || now == old {
		if now, err = c.Leader(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("%s killed, and still the primary of the slot: %v", old.Name, ctx.Err())
		}
	}
	doc, err := s.Get(ctx, "read-k")
	if err != nil {
		t.Fatalf("the first Get after %s took over from %s: %v", now.Name, old.Name, err)
	}
	if doc["rev"] != 1.0 {
		t.Errorf("read %v, want rev 1", doc)
	}
	if err := c.Rejoin(ctx, old); err != nil {
		t.Fatal(err)
	}
}

// testShardLostWrites: a shard's failover that promotes a replica which missed writes loses
// the writes its primary acknowledged (Redis replicates asynchronously), as with Sentinel.
// With wait_replicas, none of them was a success: each failed with ErrNotReplicated, an
// unknown outcome, and the record is the last one acknowledged.
func testShardLostWrites(t *testing.T, c *storecluster.RedisShards, params map[string]string) {
	settle(t, c)
	s := openCluster(t, shardsURL(t, c, params))
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	retryCreate := func() {
		for {
			err := s.Create(ctx, "l", map[string]any{"rev": 1.0})
			if err == nil || errors.Is(err, store.ErrExists) {
				return
			}
			if ctx.Err() != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond) // the replica catching up after the settle
		}
	}
	retryCreate()
	c.Key = s.Key("l")
	var acked, unknown int
	c.AfterReplicaStopped = func() {
		err := s.Patch(ctx, "l", map[string]any{"rev": 2.0}, &store.Condition{Field: "rev", Value: 1.0})
		switch {
		case err == nil:
			acked++
		case errors.Is(err, ErrNotReplicated):
			unknown++
		default:
			t.Errorf("Patch with the replica stopped: %v", err)
		}
	}
	defer func() { c.AfterReplicaStopped = nil }()
	start := time.Now()
	if err := c.Failover(ctx, true); err != nil {
		t.Fatal(err)
	}
	failedOver := time.Since(start)
	// Until a Get answers, each within a deadline as an election's attempts are; each error is
	// kept with when it came, so that a run that never gets an answer says why.
	var errs []string
	get := func() (map[string]any, error) {
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return s.Get(gctx, "l")
	}
	doc, err := get()
	for err != nil && ctx.Err() == nil {
		if len(errs) < 20 {
			errs = append(errs, fmt.Sprintf("%v: %v", time.Since(start).Round(time.Millisecond), err))
		}
		time.Sleep(50 * time.Millisecond)
		doc, err = get()
	}
	if err != nil {
		t.Fatalf("no answer to a Get %v after the failover, which took %v: %v; errors since the failover began:\n%s",
			time.Since(start)-failedOver, failedOver, err, strings.Join(errs, "\n"))
	}
	t.Logf("with %v: acknowledged %d, unknown %d; the record after the failover: %v", params, acked, unknown, doc)
	if doc["rev"] != 1.0 {
		t.Errorf("the record after the losing failover is %v, want rev 1 (the replica never had rev 2)", doc)
	}
	if params == nil && acked != 1 {
		t.Errorf("without wait_replicas the lost Patch was not acknowledged (%d): the failover lost nothing acknowledged", acked)
	}
	if params != nil && (acked != 0 || unknown != 1) {
		t.Errorf("with %v an acknowledged write was lost (acknowledged %d, unknown %d)", params, acked, unknown)
	}
}

// testSlotMigration: the record's slot moves to another primary (CLUSTER SETSLOT IMPORTING and
// MIGRATING, MIGRATE, SETSLOT NODE) while one writer patches it revision after revision: the
// client follows ASK and MOVED, and every write it acknowledged is in the record.
func testSlotMigration(t *testing.T, c *storecluster.RedisShards) {
	settle(t, c)
	s := openCluster(t, shardsURL(t, c, nil))
	cc := s.Client().(*goredis.ClusterClient)
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	if err := s.Create(ctx, "m", map[string]any{"rev": 0.0}); err != nil {
		t.Fatal(err)
	}
	rkey := s.Key("m")
	slot, err := cc.ClusterKeySlot(ctx, rkey).Result()
	if err != nil {
		t.Fatal(err)
	}
	src, err := cc.MasterForKey(ctx, rkey)
	if err != nil {
		t.Fatal(err)
	}
	var (
		dst   *goredis.Client
		dstMu sync.Mutex
	)
	err = cc.ForEachMaster(ctx, func(ctx context.Context, n *goredis.Client) error {
		dstMu.Lock()
		defer dstMu.Unlock()
		if n.Options().Addr != src.Options().Addr && dst == nil {
			dst = goredis.NewClient(&goredis.Options{Addr: n.Options().Addr})
		}
		return nil
	})
	if err != nil || dst == nil {
		t.Fatalf("no other primary: %v", err)
	}
	defer dst.Close()
	srcID, err := src.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatal(err)
	}
	dstID, err := dst.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatal(err)
	}

	var (
		mu     sync.Mutex
		acked  float64 // the last rev acknowledged
		errs   []error
		stop   = make(chan struct{})
		writer = make(chan struct{})
	)
	go func() {
		defer close(writer)
		for rev := 1.0; ; rev++ {
			select {
			case <-stop:
				return
			default:
			}
			err := s.Patch(ctx, "m", map[string]any{"rev": rev}, &store.Condition{Field: "rev", Value: rev - 1})
			mu.Lock()
			if err == nil {
				acked = rev
			} else {
				errs = append(errs, err)
			}
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	cur := func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return acked
	}
	waitAcked := func(n float64) {
		t.Helper()
		for {
			mu.Lock()
			a, e := acked, len(errs)
			mu.Unlock()
			if a >= n || e > 0 {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("the writer is stuck at rev %v", a)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	waitAcked(20)
	do := func(n *goredis.Client, args ...any) {
		t.Helper()
		if err := n.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v on %s: %v", args, n.Options().Addr, err)
		}
	}
	do(dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID)
	do(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID)
	waitAcked(cur() + 20) // writes while the slot is migrating, the key still at its source
	host, port, _ := strings.Cut(dst.Options().Addr, ":")
	for {
		keys, err := src.Do(ctx, "CLUSTER", "GETKEYSINSLOT", slot, 100).StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		do(src, args...)
	}
	waitAcked(cur() + 20) // writes answered ASK by the source
	for _, n := range []*goredis.Client{dst, src} {
		do(n, "CLUSTER", "SETSLOT", slot, "NODE", dstID)
	}
	waitAcked(cur() + 20) // writes answered MOVED by the source, once
	close(stop)
	<-writer
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		t.Errorf("a write during the migration failed: %v", errs)
	}
	doc, err := s.Get(ctx, "m")
	if err != nil || doc["rev"] != acked {
		t.Errorf("the record after the migration is %v (%v), want rev %v, the last acknowledged", doc, err, acked)
	}
	if got, err := dst.Exists(ctx, rkey).Result(); err != nil || got != 1 {
		t.Errorf("the record is not on the new owner: %v, %v", got, err)
	}
	t.Logf("%v writes acknowledged across the migration of slot %d", acked, slot)
}

// openCluster opens a store on the cluster, closed when the test ends (no cleanup of its keys:
// the cluster is the test's own).
func openCluster(t *testing.T, raw string) *Store { return openSentinel(t, raw) }
