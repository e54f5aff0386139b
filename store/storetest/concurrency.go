package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/leasehold/leasehold/store"
)

// racers is the number of goroutines racing on one key.
const racers = 16

// race runs f(i) for i in [0, racers) in goroutines released together, and returns their errors.
func race(f func(i int) error) []error {
	errs := make([]error, racers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			<-start
			errs[i] = f(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// oneWinner checks that exactly one error is nil and every other one is a loss (one of losses),
// and returns the winner's index (-1 when there is none).
func oneWinner(t *testing.T, rule, op, key string, errs []error, losses ...error) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				t.Errorf("%s: %s %q: racers %d and %d both won", rule, op, key, winner, i)
			}
			winner = i
			continue
		}
		lost := false
		for _, l := range losses {
			lost = lost || errors.Is(err, l)
		}
		if !lost {
			t.Errorf("%s: %s %q: racer %d: %v, want one of %v", rule, op, key, i, err, losses)
			continue
		}
		checkKeyError(t, err, op, key)
	}
	if winner < 0 {
		t.Errorf("%s: %s %q: no racer won", rule, op, key)
	}
	return winner
}

// testConcurrentCreate checks T1: of N concurrent creators of one key, exactly one wins and its
// document is the one stored.
func testConcurrentCreate(t *testing.T, st store.Store, key string) {
	errs := race(func(i int) error {
		return st.Create(t.Context(), key, map[string]any{"writer": i})
	})
	if w := oneWinner(t, "T1", "create", key, errs, store.ErrExists); w >= 0 {
		wantDoc(t, st, key, map[string]any{"writer": w})
	}
}

// testConcurrentPatch checks T2: of N concurrent patches holding the same condition, exactly one
// wins and the others change nothing.
func testConcurrentPatch(t *testing.T, st store.Store, key string) {
	mustCreate(t, st, key, map[string]any{"rev": "r0", "writer": -1, "untouched": true})
	cond := &store.Condition{Field: "rev", Value: "r0"}
	errs := race(func(i int) error {
		return st.Patch(t.Context(), key, map[string]any{"rev": fmt.Sprintf("r1-%d", i), "writer": i}, cond)
	})
	if w := oneWinner(t, "T2", "patch", key, errs, store.ErrConditionFailed); w >= 0 {
		wantDoc(t, st, key, map[string]any{"rev": fmt.Sprintf("r1-%d", w), "writer": w, "untouched": true})
	}
}

// testConcurrentDelete checks T2 for Delete: half the racers delete and half patch, all on the
// same condition, so exactly one of them wins; losers find the condition failed or the document
// gone. A delete that checked the condition apart from the write would let a patch and a delete
// both win.
func testConcurrentDelete(t *testing.T, st store.Store, key string) {
	mustCreate(t, st, key, map[string]any{"rev": "r0"})
	cond := &store.Condition{Field: "rev", Value: "r0"}
	op := func(i int) string {
		if i%2 == 0 {
			return "delete"
		}
		return "patch"
	}
	errs := race(func(i int) error {
		if op(i) == "delete" {
			return st.Delete(t.Context(), key, cond)
		}
		return st.Patch(t.Context(), key, map[string]any{"rev": fmt.Sprintf("r1-%d", i)}, cond)
	})
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("T2: %s and %s %q racer %d and %d both won", op(winner), op(i), key, winner, i)
		case err == nil:
			winner = i
		case errors.Is(err, store.ErrConditionFailed), errors.Is(err, store.ErrNotFound):
			checkKeyError(t, err, op(i), key)
		default:
			t.Errorf("T2: %s %q racer %d: %v, want ErrConditionFailed or ErrNotFound", op(i), key, i, err)
		}
	}
	switch {
	case winner < 0:
		t.Errorf("T2: no racer won on %q", key)
	case op(winner) == "delete":
		wantMissing(t, st, key)
	default:
		wantDoc(t, st, key, map[string]any{"rev": fmt.Sprintf("r1-%d", winner)})
	}
}

// testLostUpdate checks T2 as the election uses it: rounds of N goroutines that each read the
// document and write an increment conditioned on the revision they read. Every successful
// patch must be counted once, and every round must let at least one through (the first patch
// to land read the current revision). In even rounds every racer reads before any writes, so
// all hold the same revision and exactly one may win; odd rounds interleave reads and writes
// freely.
func testLostUpdate(t *testing.T, st store.Store, key string) {
	const rounds = 6
	mustCreate(t, st, key, map[string]any{"rev": 0, "counter": 0})
	wins := 0
	for round := range rounds {
		var (
			mu        sync.Mutex
			roundWins int
			read      sync.WaitGroup
		)
		lockstep := round%2 == 0
		read.Add(racers)
		errs := race(func(i int) error {
			doc, err := st.Get(t.Context(), key)
			if lockstep {
				read.Done()
				read.Wait()
			}
			if err != nil {
				return fmt.Errorf("get: %w", err)
			}
			rev, ok1 := doc["rev"].(float64)
			counter, ok2 := doc["counter"].(float64)
			if !ok1 || !ok2 {
				return fmt.Errorf("get returned %s: rev and counter are not numbers", show(doc))
			}
			err = st.Patch(t.Context(), key, map[string]any{"rev": rev + 1, "counter": counter + 1, "by": i},
				&store.Condition{Field: "rev", Value: rev})
			switch {
			case err == nil:
				mu.Lock()
				roundWins++
				mu.Unlock()
			case errors.Is(err, store.ErrConditionFailed):
				checkKeyError(t, err, "patch", key)
			default:
				return err
			}
			return nil
		})
		for i, err := range errs {
			if err != nil {
				t.Errorf("T2: round %d, racer %d: %v", round, i, err)
			}
		}
		switch {
		case roundWins == 0:
			t.Errorf("T2: round %d: no conditional patch succeeded", round)
		case lockstep && roundWins != 1:
			t.Errorf("T2: round %d: %d racers holding the same revision all won", round, roundWins)
		}
		wins += roundWins
	}
	doc := mustGet(t, st, key)
	if doc["counter"] != float64(wins) || doc["rev"] != float64(wins) {
		t.Errorf("T2: after %d successful conditional increments the document is %s: an update was lost or applied twice",
			wins, show(doc))
	}
}
