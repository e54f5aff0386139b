package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/leasehold/leasehold/internal/batchtest"
	"github.com/leasehold/leasehold/store"
)

// recordBatches records the events of s's batcher.
func recordBatches(s *Store) *batchtest.Recorder {
	r := batchtest.New()
	s.b.batch.Hook = r.Hook
	return r
}

// occupy fills the batcher's in-flight slots with lone writes that wait for row locks held by
// another connection, so that the next writes queue. release lets them go; the lone writes'
// errors are checked then (unless check is false).
func occupy(t *testing.T, s *Store, r *batchtest.Recorder) (release func(check bool)) {
	t.Helper()
	ctx := t.Context()
	n := s.b.batch.MaxInFlight
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("slot%d", i)
		if err := s.Create(ctx, keys[i], map[string]any{"n": 0}); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT id FROM `+pgx.Identifier{s.Table()}.Sanitize()+` WHERE id = ANY($1) FOR UPDATE`, keys); err != nil {
		t.Fatal(err)
	}
	before := r.Count("alone")
	errs := make(chan error, n)
	for _, k := range keys {
		go func() { errs <- s.Patch(ctx, k, map[string]any{"n": 1}, nil) }()
	}
	r.WaitFor(t, "alone", before+n)
	return func(check bool) {
		t.Helper()
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		conn.Close(ctx)
		for range keys {
			if err := <-errs; check && err != nil {
				t.Errorf("lone write: %v", err)
			}
		}
	}
}

// TestBatchCoalescesQueuedWrites: writes queued behind the ones in flight go in one batch (so
// in at most two round trips, one transaction each), and each caller gets its own answer.
func TestBatchCoalescesQueuedWrites(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	for _, k := range []string{"exists", "match", "nomatch"} {
		if err := s.Create(ctx, k, map[string]any{"v": 1}); err != nil {
			t.Fatal(err)
		}
	}
	r := recordBatches(s)
	release := occupy(t, s, r)

	const fresh = 20
	type op struct {
		name string
		do   func() error
		want error
	}
	var ops []op
	for i := range fresh {
		k := fmt.Sprintf("new%02d", fresh-i) // arriving out of key order
		ops = append(ops, op{"create " + k, func() error { return s.Create(ctx, k, map[string]any{"v": i}) }, nil})
	}
	ops = append(ops,
		op{"create exists", func() error { return s.Create(ctx, "exists", map[string]any{"v": 2}) }, store.ErrExists},
		op{"patch match", func() error {
			return s.Patch(ctx, "match", map[string]any{"v": 2}, &store.Condition{Field: "v", Value: 1})
		}, nil},
		op{"patch nomatch", func() error {
			return s.Patch(ctx, "nomatch", map[string]any{"v": 3}, &store.Condition{Field: "v", Value: 9})
		}, store.ErrConditionFailed},
		op{"delete missing", func() error { return s.Delete(ctx, "missing", &store.Condition{Field: "v", Value: 1}) }, store.ErrNotFound},
	)
	errs := make([]error, len(ops))
	var wg sync.WaitGroup
	for i, o := range ops {
		wg.Go(func() { errs[i] = o.do() })
	}
	r.WaitFor(t, "queued", len(ops))
	release(true)
	wg.Wait()
	for i, o := range ops {
		if !errors.Is(errs[i], o.want) || (o.want == nil && errs[i] != nil) {
			t.Errorf("%s: got %v, want %v", o.name, errs[i], o.want)
		}
	}
	sizes := r.BatchSizes()
	total := 0
	for _, n := range sizes {
		total += n
	}
	if len(sizes) > 2 || total != len(ops) {
		t.Errorf("batches %v for %d queued writes, want at most 2 holding all of them", sizes, len(ops))
	}
	for i := range fresh {
		k := fmt.Sprintf("new%02d", fresh-i)
		if doc, err := s.Get(ctx, k); err != nil || doc["v"] != float64(i) {
			t.Errorf("Get(%s) = %v, %v", k, doc, err)
		}
	}
	if doc, err := s.Get(ctx, "match"); err != nil || doc["v"] != float64(2) {
		t.Errorf("Get(match) = %v, %v", doc, err)
	}
}

// TestBatchSameKeyInOrder: two writes of one key in a batch run one after the other, the second
// seeing the first's effect.
func TestBatchSameKeyInOrder(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	r := recordBatches(s)
	release := occupy(t, s, r)

	ops := []func() error{
		func() error { return s.Create(ctx, "k", map[string]any{"v": 1}) },
		func() error { return s.Patch(ctx, "k", map[string]any{"v": 2}, &store.Condition{Field: "v", Value: 1}) },
	}
	errs := make([]error, len(ops))
	var wg sync.WaitGroup
	for i, do := range ops {
		// One at a time into the queue, so that their order is known.
		wg.Go(func() { errs[i] = do() })
		r.WaitFor(t, "queued", i+1)
	}
	release(true)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("write %d: %v", i, err)
		}
	}
	if doc, err := s.Get(ctx, "k"); err != nil || doc["v"] != float64(2) {
		t.Errorf("Get(k) = %v, %v, want v 2", doc, err)
	}
	if sizes := r.BatchSizes(); len(sizes) != 1 || sizes[0] != 2 {
		t.Errorf("batches %v, want one of 2", sizes)
	}
}

// TestBatchQueuedCallerCancelled: a caller whose context ends while queued gets its context's
// error and its write is never sent.
func TestBatchQueuedCallerCancelled(t *testing.T) {
	s := openTest(t)
	r := recordBatches(s)
	release := occupy(t, s, r)

	cctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Create(cctx, "gone", map[string]any{"v": 1}) }()
	r.WaitFor(t, "queued", 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled queued Create: %v, want context.Canceled", err)
	}
	release(true)
	if _, err := s.Get(t.Context(), "gone"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of the cancelled Create's key: %v, want ErrNotFound", err)
	}
	if sizes := r.BatchSizes(); len(sizes) != 0 {
		t.Errorf("batches %v sent, want none", sizes)
	}
}

// TestBatchFailedStatement: a batch whose transaction fails on one statement commits nothing;
// every other caller still gets a true answer (here: its Create inserted, not ErrExists), and
// the failing one its own error.
func TestBatchFailedStatement(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `ALTER TABLE `+pgx.Identifier{s.Table()}.Sanitize()+` ADD CONSTRAINT no_bad CHECK (id <> 'bad')`); err != nil {
		t.Fatal(err)
	}
	r := recordBatches(s)
	release := occupy(t, s, r)

	keys := []string{"a", "bad", "c", "d"}
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Go(func() { errs[i] = s.Create(ctx, k, map[string]any{"v": 1}) })
	}
	r.WaitFor(t, "queued", len(keys))
	release(true)
	wg.Wait()
	for i, k := range keys {
		if k == "bad" {
			var pe *pgconn.PgError
			if !errors.As(errs[i], &pe) || pe.Code != "23514" {
				t.Errorf("Create(bad): %v, want the check violation", errs[i])
			}
			continue
		}
		if errs[i] != nil {
			t.Errorf("Create(%s): %v", k, errs[i])
		}
		if _, err := s.Get(ctx, k); err != nil {
			t.Errorf("Get(%s): %v", k, err)
		}
	}
	if sizes := r.BatchSizes(); len(sizes) != 1 || sizes[0] != len(keys) {
		t.Errorf("batches %v, want one of %d", sizes, len(keys))
	}
}

// TestBatchCloseFailsQueued: Close fails the queued writes with the closed store's error.
func TestBatchCloseFailsQueued(t *testing.T) {
	s := openTest(t)
	r := recordBatches(s)
	release := occupy(t, s, r)
	done := make(chan error, 1)
	go func() { done <- s.Create(t.Context(), "late", map[string]any{"v": 1}) }()
	r.WaitFor(t, "queued", 1)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		s.Close()
	}()
	if err := <-done; !errors.Is(err, errStoreClosed) {
		t.Errorf("queued Create at Close: %v, want %v", err, errStoreClosed)
	}
	<-closed
	// The lone writes in flight failed as Close closed their connections under them.
	release(false)
}

// TestBatchAtMostTwoWritesOfAKey: a third write of a key waits for another batch (maxPerKey:
// PostgreSQL would deliver only one of a transaction's identical notifications, and with states
// A, B, A a watch would end on B).
func TestBatchAtMostTwoWritesOfAKey(t *testing.T) {
	s := openTest(t)
	ctx := t.Context()
	if err := s.Create(ctx, "k", map[string]any{"v": 0}); err != nil {
		t.Fatal(err)
	}
	r := recordBatches(s)
	release := occupy(t, s, r)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i, v := range []int{1, 2, 1} {
		wg.Go(func() { errs[i] = s.Patch(ctx, "k", map[string]any{"v": v}, nil) })
		r.WaitFor(t, "queued", i+1)
	}
	release(true)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("write %d: %v", i, err)
		}
	}
	if sizes := r.BatchSizes(); len(sizes) != 2 || sizes[0] != 2 || sizes[1] != 1 {
		t.Errorf("batches %v, want [2 1]", sizes)
	}
}

// TestBatchCoalescesQueuedReads: the Gets queued behind the reads in flight go as one query,
// and each caller gets its own answer: its document (twice for a key asked twice), or not
// found; when that query fails, each reads alone.
func TestBatchCoalescesQueuedReads(t *testing.T) {
	for _, broken := range []bool{false, true} {
		t.Run(fmt.Sprintf("broken=%v", broken), func(t *testing.T) { testQueuedReads(t, broken) })
	}
}

func testQueuedReads(t *testing.T, broken bool) {
	s := openTest(t)
	ctx := t.Context()
	for k, n := range map[string]float64{"read:a": 1, "read:b": 2} {
		if err := s.Create(ctx, k, map[string]any{"n": n}); err != nil {
			t.Fatal(err)
		}
	}
	if broken {
		// The batch's query fails: each caller reads alone, and gets its own answer.
		s.b.reads.getMany = "SELECT no_such_column FROM no_such_table WHERE $1::text[] IS NULL"
	}
	r := batchtest.New()
	s.b.reads.Hook = r.Hook
	gate := make(chan struct{})
	lone := s.b.reads.Lone
	s.b.reads.Lone = func(ctx context.Context, key string) pgRead {
		<-gate
		return lone(ctx, key)
	}
	n := s.b.reads.MaxInFlight
	var held sync.WaitGroup
	for range n {
		held.Go(func() { _, _ = s.Get(ctx, "read:a") })
	}
	r.WaitFor(t, "alone", n)

	keys := []string{"read:a", "read:missing", "read:b", "read:a"}
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
		t.Errorf("batches %v, want one of %d", sizes, len(keys))
	}
	for i, want := range []any{1.0, nil, 2.0, 1.0} {
		if want == nil {
			if !errors.Is(errs[i], store.ErrNotFound) {
				t.Errorf("Get %s: %v, want ErrNotFound", keys[i], errs[i])
			}
			continue
		}
		if errs[i] != nil || docs[i]["n"] != want {
			t.Errorf("Get %s = %v, %v; want n = %v", keys[i], docs[i], errs[i], want)
		}
	}
}
