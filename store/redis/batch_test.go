package redis

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/leasehold/leasehold/internal/batchtest"
	"github.com/leasehold/leasehold/store"
)

// These tests are not parallel: TestPipelineNoScript empties the server's script cache, and
// the others replace the store's lone writes, which must happen before any write.

// recordBatches records the events of s's batcher.
func recordBatches(s *Store) *batchtest.Recorder {
	r := batchtest.New()
	s.b.batch.Hook = r.Hook
	return r
}

// occupy fills the batcher's in-flight slots with lone writes held back before they are sent,
// so that the next writes queue. release lets them go (each then runs on the server, and then
// after runs, before the slot frees) and returns their errors.
func occupy(t *testing.T, s *Store, r *batchtest.Recorder, after func()) (release func() []error) {
	t.Helper()
	gate := make(chan struct{})
	lone := s.b.batch.Lone
	s.b.batch.Lone = func(ctx context.Context, w redisWrite) *goredis.Cmd {
		select {
		case <-gate:
		case <-ctx.Done():
		}
		cmd := lone(ctx, w)
		if after != nil {
			after()
		}
		return cmd
	}
	n := s.b.batch.MaxInFlight
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- s.Create(t.Context(), fmt.Sprintf("slot%d", i), map[string]any{"n": 0}) }()
	}
	r.WaitFor(t, "alone", n)
	return func() []error {
		close(gate)
		var out []error
		for range n {
			out = append(out, <-errs)
		}
		return out
	}
}

type pipeOp struct {
	name string
	do   func(ctx context.Context) error
	want error // nil: no error
}

// runQueued starts ops one at a time into the queue (so that their order is known) behind the
// occupied slots, releases them and checks each answer.
func runQueued(t *testing.T, s *Store, r *batchtest.Recorder, release func() []error, ops []pipeOp) {
	t.Helper()
	errs := make([]error, len(ops))
	var wg sync.WaitGroup
	before := r.Count("queued")
	for i, o := range ops {
		wg.Go(func() { errs[i] = o.do(t.Context()) })
		r.WaitFor(t, "queued", before+i+1)
	}
	for _, err := range release() {
		if err != nil {
			t.Errorf("lone write: %v", err)
		}
	}
	wg.Wait()
	for i, o := range ops {
		if o.want == nil && errs[i] != nil || o.want != nil && !errors.Is(errs[i], o.want) {
			t.Errorf("%s: got %v, want %v", o.name, errs[i], o.want)
		}
	}
}

func create(s *Store, key string, v any) func(context.Context) error {
	return func(ctx context.Context) error { return s.Create(ctx, key, map[string]any{"v": v}) }
}

func patchIf(s *Store, key string, v, cond any) func(context.Context) error {
	return func(ctx context.Context) error {
		return s.Patch(ctx, key, map[string]any{"v": v}, &store.Condition{Field: "v", Value: cond})
	}
}

// mixedOps is a queue of writes whose answers differ: each caller must get its own.
func mixedOps(t *testing.T, s *Store) []pipeOp {
	t.Helper()
	for _, k := range []string{"exists", "match", "nomatch", "gone"} {
		if err := s.Create(t.Context(), k, map[string]any{"v": 1}); err != nil {
			t.Fatal(err)
		}
	}
	var ops []pipeOp
	for i := range 10 {
		k := fmt.Sprintf("new%02d", i)
		ops = append(ops, pipeOp{"create " + k, create(s, k, i), nil})
	}
	return append(ops,
		pipeOp{"create exists", create(s, "exists", 2), store.ErrExists},
		pipeOp{"patch match", patchIf(s, "match", 2, 1), nil},
		pipeOp{"patch nomatch", patchIf(s, "nomatch", 3, 9), store.ErrConditionFailed},
		pipeOp{"patch missing", patchIf(s, "missing", 3, 1), store.ErrNotFound},
		pipeOp{"delete gone", func(ctx context.Context) error {
			return s.Delete(ctx, "gone", &store.Condition{Field: "v", Value: 1})
		}, nil},
		pipeOp{"delete missing", func(ctx context.Context) error {
			return s.Delete(ctx, "missing", &store.Condition{Field: "v", Value: 1})
		}, store.ErrNotFound},
	)
}

// checkMixed checks the documents mixedOps left.
func checkMixed(t *testing.T, s *Store) {
	t.Helper()
	ctx := t.Context()
	for i := range 10 {
		k := fmt.Sprintf("new%02d", i)
		if doc, err := s.Get(ctx, k); err != nil || doc["v"] != float64(i) {
			t.Errorf("Get(%s) = %v, %v", k, doc, err)
		}
	}
	for k, v := range map[string]float64{"exists": 1, "match": 2, "nomatch": 1} {
		if doc, err := s.Get(ctx, k); err != nil || doc["v"] != v {
			t.Errorf("Get(%s) = %v, %v, want v %v", k, doc, err, v)
		}
	}
	for _, k := range []string{"gone", "missing"} {
		if _, err := s.Get(ctx, k); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get(%s): %v, want ErrNotFound", k, err)
		}
	}
}

// TestPipelineCoalescesQueuedWrites: the writes queued behind the ones in flight go as one
// pipeline, and each caller gets its own answer (ok, exists, condition failed, not found).
func TestPipelineCoalescesQueuedWrites(t *testing.T) {
	s := openTest(t)
	ops := mixedOps(t, s)
	r := recordBatches(s)
	runQueued(t, s, r, occupy(t, s, r, nil), ops)
	if sizes := r.BatchSizes(); len(sizes) != 1 || sizes[0] != len(ops) {
		t.Errorf("pipelines %v, want one of %d", sizes, len(ops))
	}
	checkMixed(t, s)
}

// TestPipelineSameKeyInOrder: writes of one key in a pipeline run in their order of arrival,
// each seeing the one before.
func TestPipelineSameKeyInOrder(t *testing.T) {
	s := openTest(t)
	r := recordBatches(s)
	release := occupy(t, s, r, nil)
	del := func(cond any) func(context.Context) error {
		return func(ctx context.Context) error { return s.Delete(ctx, "k", &store.Condition{Field: "v", Value: cond}) }
	}
	runQueued(t, s, r, release, []pipeOp{
		{"create 1", create(s, "k", 1), nil},
		{"patch 1 to 2", patchIf(s, "k", 2, 1), nil},
		{"patch 2 to 3", patchIf(s, "k", 3, 2), nil},
		{"delete 3", del(3), nil},
		{"create 4", create(s, "k", 4), nil},
		{"create 5", create(s, "k", 5), store.ErrExists},
		{"patch 4 to 6", patchIf(s, "k", 6, 4), nil},
	})
	if doc, err := s.Get(t.Context(), "k"); err != nil || doc["v"] != float64(6) {
		t.Errorf("Get(k) = %v, %v, want v 6", doc, err)
	}
	if sizes := r.BatchSizes(); len(sizes) != 1 || sizes[0] != 7 {
		t.Errorf("pipelines %v, want one of 7", sizes)
	}
}

// TestPipelineNoScript: a pipeline sent after SCRIPT FLUSH (every EVALSHA refused with
// NOSCRIPT, nothing run) still gives each caller its own true answer.
func TestPipelineNoScript(t *testing.T) {
	s := openTest(t)
	ops := mixedOps(t, s)
	r := recordBatches(s)
	flush := func() {
		if err := s.Client().ScriptFlush(context.Background()).Err(); err != nil {
			t.Errorf("SCRIPT FLUSH: %v", err)
		}
	}
	// The cache is emptied after the lone writes ran (loading the scripts again) and before
	// their slots free, so just before the pipeline is sent.
	runQueued(t, s, r, occupy(t, s, r, flush), ops)
	if sizes := r.BatchSizes(); len(sizes) != 1 || sizes[0] != len(ops) {
		t.Errorf("pipelines %v, want one of %d", sizes, len(ops))
	}
	checkMixed(t, s)
}

// TestPipelineQueuedCallerCancelled: a caller whose context ends while queued gets its
// context's error, and its write is never sent.
func TestPipelineQueuedCallerCancelled(t *testing.T) {
	s := openTest(t)
	r := recordBatches(s)
	release := occupy(t, s, r, nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Create(ctx, "gone", map[string]any{"v": 1}) }()
	r.WaitFor(t, "queued", 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled queued Create: %v, want context.Canceled", err)
	}
	for _, err := range release() {
		if err != nil {
			t.Errorf("lone write: %v", err)
		}
	}
	if _, err := s.Get(t.Context(), "gone"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of the cancelled Create's key: %v, want ErrNotFound", err)
	}
	if sizes := r.BatchSizes(); len(sizes) != 0 {
		t.Errorf("pipelines %v sent, want none", sizes)
	}
}

// TestPipelineCloseFailsQueued: Close fails the queued writes with the closed store's error,
// and no goroutine of the batcher outlives it.
func TestPipelineCloseFailsQueued(t *testing.T) {
	raw, _ := serverURL(t)
	s, err := Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	r := recordBatches(s)
	release := occupy(t, s, r, nil)
	const n = 5
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- s.Create(t.Context(), fmt.Sprintf("late%d", i), map[string]any{"v": 1}) }()
	}
	r.WaitFor(t, "queued", n)
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	for range n {
		if err := <-errs; !errors.Is(err, errStoreClosed) {
			t.Errorf("queued Create at Close: %v, want %v", err, errStoreClosed)
		}
	}
	release() // the lone writes fail on the closed client
	if sizes := r.BatchSizes(); len(sizes) != 0 {
		t.Errorf("pipelines %v sent after Close, want none", sizes)
	}
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	for _, g := range strings.Split(stacks, "\n\n") {
		if strings.Contains(g, "store/driver.(*Batcher") || strings.Contains(g, "store/redis.sendPipeline") {
			t.Errorf("goroutine left after Close:\n%s", g)
		}
	}
}

// TestPipelineCoalescesQueuedReads: the Gets queued behind the ones in flight go as one
// pipeline of GET, and each caller gets its own answer: a document, not found, or the
// WRONGTYPE error of a key of another type.
func TestPipelineCoalescesQueuedReads(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	if err := s.Create(ctx, "read:a", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, "read:b", map[string]any{"n": 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.Client().HSet(ctx, s.Prefix()+"read:hash", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	r := batchtest.New()
	s.b.reads.Hook = r.Hook
	gate := make(chan struct{})
	lone := s.b.reads.Lone
	s.b.reads.Lone = func(ctx context.Context, key string) *goredis.StringCmd {
		<-gate
		return lone(ctx, key)
	}
	n := s.b.reads.MaxInFlight
	var held sync.WaitGroup
	for range n {
		held.Go(func() { _, _ = s.Get(ctx, "read:a") })
	}
	r.WaitFor(t, "alone", n)

	keys := []string{"read:a", "read:missing", "read:b", "read:hash", "read:a"}
	docs := make([]map[string]any, len(keys))
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Go(func() { docs[i], errs[i] = s.Get(ctx, k) })
		r.WaitFor(t, "queued", i+1)
	}
	close(gate)
	wg.Wait()
	held.Wait()
	if sizes := r.BatchSizes(); len(sizes) != 1 || sizes[0] != len(keys) {
		t.Errorf("pipelines %v, want one of %d", sizes, len(keys))
	}
	for i, want := range []any{1.0, nil, 2.0, nil, 1.0} {
		switch keys[i] {
		case "read:missing":
			if !errors.Is(errs[i], store.ErrNotFound) {
				t.Errorf("Get %s: %v, want ErrNotFound", keys[i], errs[i])
			}
		case "read:hash":
			if errs[i] == nil || !strings.Contains(errs[i].Error(), "WRONGTYPE") {
				t.Errorf("Get %s: %v, want WRONGTYPE", keys[i], errs[i])
			}
		default:
			if errs[i] != nil || docs[i]["n"] != want {
				t.Errorf("Get %s = %v, %v; want n = %v", keys[i], docs[i], errs[i], want)
			}
		}
	}
}
