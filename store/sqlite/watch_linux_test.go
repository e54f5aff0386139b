package sqlite

import (
	"errors"
	"os"
	"os/exec"
	"testing"

	"github.com/leasehold/leasehold/internal/leakcheck"
	"github.com/leasehold/leasehold/internal/watchtest"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

const childWriteEnv = "LEASEHOLD_SQLITE_CHILD_WRITE"

// T8: a write made by another process reaches a watch, through the -wal file's change.
func TestWatchOtherProcess(t *testing.T) {
	t.Parallel()
	raw := fileURL(t, "")
	s, err := Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(t.Context(), "k", map[string]any{"n": 0}); err != nil {
		t.Fatal(err)
	}
	r := watchtest.Start(t, s, "k")
	r.WaitDoc(t, map[string]any{"n": float64(0)})
	for i := 1; i <= 3; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWatchOtherProcessChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), childURLEnv+"="+raw, childWriteEnv+"=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		r.WaitDoc(t, map[string]any{"n": float64(i)})
	}
}

// TestWatchOtherProcessChild is the child's part of TestWatchOtherProcess: one increment of k.
func TestWatchOtherProcessChild(t *testing.T) {
	raw := os.Getenv(childURLEnv)
	if raw == "" || os.Getenv(childWriteEnv) == "" {
		t.Skip("run by TestWatchOtherProcess")
	}
	s, err := Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	doc, err := s.Get(t.Context(), "k")
	if err != nil {
		t.Fatal(err)
	}
	n := doc["n"].(float64)
	if err := s.Patch(t.Context(), "k", map[string]any{"n": n + 1}, &store.Condition{Field: "n", Value: n}); err != nil {
		t.Fatal(err)
	}
}

// T8: 200 watches on one store (one inotify instance) each deliver their own key's final state.
func TestWatchManyKeys(t *testing.T) {
	t.Parallel()
	storetest.WatchMany(t, openTest(t, ""), 200)
}

// Close ends the store's watches with an error, and leaves no goroutine behind.
func TestWatchEndsOnClose(t *testing.T) {
	t.Parallel()
	tr := leakcheck.New()
	tr.Do(func() {
		s, err := Open(t.Context(), fileURL(t, ""))
		if err != nil {
			t.Fatal(err)
		}
		storetest.WatchClosed(t, s)
		r := watchtest.Start(t, s, "k")
		if err := r.Ended(t); !errors.Is(err, errClosed) {
			t.Errorf("watch of a closed store returned %v, want errClosed", err)
		}
	})
	tr.Check(t, watchtest.Wait)
}

// BenchmarkWatchLatency: how long a Patch takes to reach a watch of its key (inotify on the
// -wal file, the write lock taken and released, then the Portable store's read):
//
//	go test -run '^$' -bench WatchLatency ./store/sqlite
func BenchmarkWatchLatency(b *testing.B) {
	storetest.BenchmarkWatchLatency(b, func(b *testing.B) store.Store { return openTest(b, "") })
}
