// Package bubble is what the fake-time tests of the engine and of its products share: the
// world of a testing/synctest bubble (one memory store every instance of a test reaches, and
// the instant the world began), and the seeds a randomized test runs.
package bubble

import (
	"io"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/store/memory"
)

// World is the store the instances of a test share, and the fake time it began at.
type World struct {
	T     *testing.T
	Mem   *memory.Store
	Start time.Time
}

// New returns a world beginning now, with an empty memory store. Call it inside the bubble.
func New(t *testing.T) *World { return &World{T: t, Mem: memory.New(), Start: time.Now()} }

// Since returns the fake time elapsed since the world began.
func (w *World) Since() time.Duration { return time.Since(w.Start) }

// Rel returns t as a duration since the world began.
func (w *World) Rel(t time.Time) time.Duration { return t.Sub(w.Start) }

// At sleeps until d after the world began (fake time inside a bubble) and waits for every
// goroutine of the bubble to block.
func (w *World) At(d time.Duration) {
	w.T.Helper()
	if wait := w.Start.Add(d).Sub(time.Now()); wait > 0 {
		time.Sleep(wait)
	}
	synctest.Wait()
}

// Sec returns f seconds.
func Sec(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// QuietLogger returns a logger that writes nothing.
func QuietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Seeds returns the seeds a randomized test runs: only if it is not 0; else count of them
// (default $LEASEHOLD_RANDOM_SEEDS, else n) from first (default $LEASEHOLD_RANDOM_FIRST,
// else 1), so that a long sweep can run in chunks.
func Seeds(t *testing.T, n int, only uint64, count int, first uint64) []uint64 {
	if only != 0 {
		return []uint64{only}
	}
	if v := os.Getenv("LEASEHOLD_RANDOM_SEEDS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("LEASEHOLD_RANDOM_SEEDS=%q: want a positive integer", v)
		}
	}
	if count > 0 {
		n = count
	}
	if first == 0 {
		first = 1
		if v := os.Getenv("LEASEHOLD_RANDOM_FIRST"); v != "" {
			var err error
			if first, err = strconv.ParseUint(v, 10, 64); err != nil || first < 1 {
				t.Fatalf("LEASEHOLD_RANDOM_FIRST=%q: want a positive integer", v)
			}
		}
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = first + uint64(i)
	}
	return seeds
}
