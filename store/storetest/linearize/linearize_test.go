package linearize_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/file"
	"github.com/leasehold/leasehold/store/memory"
	"github.com/leasehold/leasehold/store/storetest/linearize"
)

// The core module's stores, which cannot import this module: the memory store, shared by the
// clients, and the file store, one Store per client on the same file (as processes open it).
func TestMemory(t *testing.T) {
	t.Parallel()
	s := memory.New()
	linearize.Run(t, func(*testing.T) store.Store { return s })
}

func TestFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "store.json")
	linearize.Run(t, func(t *testing.T) store.Store {
		s, err := file.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// brokenConfig is smaller than the default: every defect shows within it, and the failing
// histories are minimized, which takes longer than checking a legal one.
var brokenConfig = linearize.Config{Histories: 4, CutHistories: 16}

// TestSoundWrapper: the wrappers of the broken stores, without a defect, pass; what fails below
// fails by its defect.
func TestSoundWrapper(t *testing.T) {
	t.Parallel()
	s := &slow{Store: memory.New(), defect: sound}
	linearize.RunConfig(t, brokenConfig, func(*testing.T) store.Store { return s })
}

// TestBrokenStores shows the check failing each defect, by the rule the defect breaks: a
// history that is not linearizable, or an answer that breaks T7 by itself.
func TestBrokenStores(t *testing.T) {
	for _, c := range []struct {
		defect    string
		illegal   bool   // a history is not linearizable
		violation string // a violation's message holds this
	}{
		{nonAtomic, true, ""},
		{failsApplied, true, ""},
		{existsOnDeadline, true, ""},
		{joinsDeadline, false, "T7: the answer is both definite and unknown"},
	} {
		t.Run(strings.ReplaceAll(c.defect, " ", "_"), func(t *testing.T) {
			t.Parallel()
			s := &slow{Store: memory.New(), defect: c.defect}
			r := linearize.Check(t, brokenConfig, func(*testing.T) store.Store { return s })
			t.Log(r.Summary())
			if len(r.Failures) == 0 {
				t.Fatalf("the check passed a store that %s", c.defect)
			}
			if c.illegal != (r.Illegal > 0) {
				t.Errorf("%d illegal histories; want illegal histories: %v", r.Illegal, c.illegal)
			}
			all := strings.Join(r.Failures, "\n")
			if c.violation != "" && !strings.Contains(all, c.violation) {
				t.Errorf("no violation says %q", c.violation)
			}
			if c.violation == "" && r.Violations > 0 {
				t.Errorf("%d violations, want none", r.Violations)
			}
			if c.illegal {
				// The report: the smallest history, and the visualizations it names, written.
				if !strings.Contains(all, "The smallest illegal history found") {
					t.Errorf("the failure does not show the smallest illegal history")
				}
				if len(r.Artifacts) == 0 {
					t.Errorf("no visualization written")
				}
				for _, a := range r.Artifacts {
					if !strings.Contains(all, a) {
						t.Errorf("the failure does not name %s", a)
					}
					if b, err := os.ReadFile(a); err != nil || !strings.Contains(string(b), "<html") {
						t.Errorf("visualization %s: %v", a, err)
					}
				}
			}
			// The first failure, as a store's test would show it.
			t.Log(r.Failures[0])
		})
	}
}
