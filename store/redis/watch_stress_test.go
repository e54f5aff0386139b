package redis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store"
)

// TestWatchBurstsManyStores: several Stores (each its own hub, its own Pub/Sub connection)
// watch the same keys, one watch per key per Store, while all of them write the keys by
// compare-and-swap in bursts, so that one key's writes by different Stores follow each other
// within a pipeline's time. During each burst, the watches of every fourth key end and start
// again, so that their channels are unsubscribed and subscribed again on the hubs while
// messages are in flight. After the bursts, one last write
// per key: every watch must deliver it (T8: every write made after a watch's first state is
// followed by that state or a later one), and no watch may deliver a state older than the one
// before it, nor end with an error.
//
// LEASEHOLD_WATCH_BURSTS=stores,keys,rounds runs it at another size (11,10000,3 is a bench's
// partitions test on one machine).
func TestWatchBurstsManyStores(t *testing.T) {
	t.Parallel()
	nStores, nKeys, rounds := 4, 1000, 3
	if testing.Short() {
		nKeys, rounds = 300, 2
	}
	if v := os.Getenv("LEASEHOLD_WATCH_BURSTS"); v != "" {
		if _, err := fmt.Sscanf(v, "%d,%d,%d", &nStores, &nKeys, &rounds); err != nil {
			t.Fatalf("LEASEHOLD_WATCH_BURSTS=%q: want stores,keys,rounds: %v", v, err)
		}
	}
	const writers = 8 // per Store
	raw, prefix := serverURL(t)
	stores := make([]*Store, nStores)
	stores[0] = openCleaned(t, raw, prefix)
	for i := 1; i < nStores; i++ {
		s, err := Open(t.Context(), raw)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i] = s
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	pad := strings.Repeat("p", 250) // records of about 300 bytes, as leases are
	key := func(k int) string { return fmt.Sprintf("burst-%05d", k) }
	if err := forEach(ctx, nKeys, writers, func(k int) error {
		return stores[0].Create(ctx, key(k), map[string]any{"v": 0, "by": -1, "pad": pad})
	}); err != nil {
		t.Fatal(err)
	}

	type watcher struct {
		s, k     int
		restarts bool
		last     atomic.Int64 // the newest v delivered, -1 before any
		final    chan struct{}
		once     sync.Once
		renew    chan struct{} // cap 1: end the current watch and watch again
		err      atomic.Value  // the error a watch ended with
	}
	var (
		ws        []*watcher
		firstLeft atomic.Int64
		allFirst  = make(chan struct{})
		wg        sync.WaitGroup
		mu        sync.Mutex
		failures  []string
	)
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 50 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	firstLeft.Store(int64(nStores * nKeys))
	for s := range nStores {
		for k := range nKeys {
			w := &watcher{s: s, k: k, restarts: k%4 == 0, final: make(chan struct{}), renew: make(chan struct{}, 1)}
			w.last.Store(-1)
			ws = append(ws, w)
		}
	}
	defer wg.Wait()
	defer cancel()
	for _, w := range ws {
		wg.Go(func() {
			counted := false
			for {
				wctx, stop := context.WithCancel(ctx)
				first := true
				ended := make(chan error, 1)
				go func() {
					ended <- stores[w.s].Watch(wctx, key(w.k), func(c store.Change) {
						if !c.Found {
							report("store %d, key %d: the watch delivered no document; none was deleted", w.s, w.k)
							return
						}
						v, _ := c.Doc["v"].(float64)
						if prev := w.last.Swap(int64(v)); int64(v) < prev {
							report("store %d, key %d: the watch delivered v=%v after v=%d", w.s, w.k, v, prev)
						}
						if c.Doc["final"] == true {
							w.once.Do(func() { close(w.final) })
						}
						if !first {
							return
						}
						first = false
						if !counted {
							counted = true
							if firstLeft.Add(-1) == 0 {
								close(allFirst)
							}
						}
					})
				}()
				select {
				case err := <-ended:
					stop()
					if ctx.Err() == nil {
						w.err.Store(err)
						report("store %d, key %d: the watch ended: %v", w.s, w.k, err)
					}
					return
				case <-w.renew:
					stop()
					<-ended
				}
			}
		})
	}
	started, startEnd := context.WithTimeout(ctx, 30*time.Second) // bounds a failing test
	defer startEnd()
	select {
	case <-allFirst:
	case <-started.Done():
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%d watches never delivered their first state; %s", firstLeft.Load(), strings.Join(failures, "; "))
	}

	// Bursts: every Store, with several goroutines, reads each key and writes it on the
	// condition that it is still what it read. Stores race on every key; the losers' writes
	// fail their condition and change nothing.
	var written atomic.Int64
	for r := range rounds {
		var bw sync.WaitGroup
		for s := range nStores {
			bw.Go(func() {
				err := forEach(ctx, nKeys, writers, func(k int) error {
					doc, err := stores[s].Get(ctx, key(k))
					if err != nil {
						return err
					}
					v, _ := doc["v"].(float64)
					err = stores[s].Patch(ctx, key(k), map[string]any{"v": v + 1, "by": s, "round": r},
						&store.Condition{Field: "v", Value: v})
					if errors.Is(err, store.ErrConditionFailed) {
						return nil
					}
					if err == nil {
						written.Add(1)
					}
					return err
				})
				if err != nil {
					report("store %d, round %d: %v", s, r, err)
				}
			})
		}
		// While the burst runs.
		for _, w := range ws {
			if w.restarts {
				select {
				case w.renew <- struct{}{}:
				default:
				}
			}
		}
		bw.Wait()
	}

	// The last write of each key. A restarting watch may still be starting: its first state is
	// then this write or a later one.
	finalV := make([]int64, nKeys)
	if err := forEach(ctx, nKeys, writers, func(k int) error {
		s := stores[k%nStores]
		doc, err := s.Get(ctx, key(k))
		if err != nil {
			return err
		}
		v, _ := doc["v"].(float64)
		finalV[k] = int64(v) + 1
		return s.Patch(ctx, key(k), map[string]any{"v": v + 1, "final": true}, &store.Condition{Field: "v", Value: v})
	}); err != nil {
		t.Fatalf("last writes: %v", err)
	}

	// The deadline bounds a test that fails (a state never delivered); a passing one goes on
	// as soon as every watch has delivered the last write.
	wait, waitEnd := context.WithTimeout(ctx, 30*time.Second)
	defer waitEnd()
	var missed []string
	for _, w := range ws {
		select {
		case <-w.final:
		case <-wait.Done():
			if len(missed) < 50 {
				missed = append(missed, fmt.Sprintf("store %d, key %d (restarting %v): delivered v=%d, last write v=%d, ended with %v",
					w.s, w.k, w.restarts, w.last.Load(), finalV[w.k], w.err.Load()))
			}
		}
	}
	cancel()
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	if len(missed) > 0 {
		t.Errorf("watches that never delivered their key's last write (%d writes made), the first %d:\n%s",
			written.Load(), len(missed), strings.Join(missed, "\n"))
	}
	t.Logf("%d stores × %d keys, %d rounds: %d writes made", nStores, nKeys, rounds, written.Load())
}

// forEach runs fn for 0..n-1 on par goroutines, and returns the first error, or ctx's.
func forEach(ctx context.Context, n, par int, fn func(int) error) error {
	var (
		next  atomic.Int64
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	for range par {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}
