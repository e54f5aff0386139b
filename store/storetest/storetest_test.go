package storetest_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

const childEnv = "LEASEHOLD_STORETEST_BROKEN"

// defects maps each defect of the broken store to subtests of the suite that must fail on it.
// Only subtests that fail whatever the scheduling are listed: T2/ConcurrentDelete catches an
// ignored condition only when two writes interleave.
var defects = map[string][]string{
	"IgnoresCondition":    {"T2/Condition/String/Fails", "T2/ConcurrentPatch", "T2/LostUpdate", "Patch/CompareAndSwap"},
	"SkipsFalsyCondition": {"T2/Condition/Falsy/FalseApplied", "T2/Condition/Falsy/ZeroApplied", "T2/Condition/Falsy/EmptyStringApplied", "T2/Condition/Falsy/NullApplied"},
	"MissingFieldIsNull":  {"T2/Condition/Missing/Null"},
	"ComparesText":        {"T2/Condition/Type/StringIsNotNumber", "T2/Condition/Type/NumberIsNotString"},
	"CreateOverwrites":    {"T1/CreateExisting", "T1/ConcurrentCreate", "Delete/ThenCreate"},
	"BareErrors":          {"T3/KeyError/EveryOperation", "T3/NotFound/Get", "T3/NotFound/Delete"},
	"IgnoresContext":      {"Context/Canceled", "Context/DeadlineExceeded"},
	"SharesDocuments":     {"RoundTrip/GetReturnsCopy"},
	"KeepsInput":          {"RoundTrip/CreateCopiesInput"},
	"NullRemovesField":    {"Patch/NullIsAValue"},
	"KeysCaseInsensitive": {"Keys/Distinct"},
	"AcceptsUnencodable":  {"Invalid/Unencodable/NaN", "Invalid/Unencodable/channel"},
	"JoinsContextError":   {"T7/DefiniteOrUnknown"},
	// The watch defects (broken_watch_test.go).
	"WatchOutOfOrder":       {"T8/Watch/Order"},
	"WatchMissesLastWrite":  {"T8/Watch/Initial", "T8/Watch/Order", "T8/Watch/OtherKeys", "T8/Watch/Concurrent"},
	"WatchOtherKeys":        {"T8/Watch/OtherKeys"},
	"WatchCallsAfterCancel": {"T8/Watch/Cancel"},
	"WatchReturnsNil":       {"T8/Watch/Cancel", "T8/Watch/Concurrent"},
}

// TestBroken runs the suite on a broken store; only TestSuiteCatchesDefects runs it, in a child
// process, since its subtests are meant to fail.
func TestBroken(t *testing.T) {
	defect := os.Getenv(childEnv)
	if defect == "" {
		t.Skip("run by TestSuiteCatchesDefects")
	}
	// The memory store answers at once: what has not come within this bound never will, and
	// a defect that never delivers a state fails the subtests that wait for it this soon.
	storetest.SetWatchWait(3 * time.Second)
	storetest.Run(t, func(t *testing.T) store.Store { return newBroken(defect) })
}

// TestWrapperIsSound runs the suite on the broken store's wrapper with no defect: what fails in
// TestSuiteCatchesDefects fails because of the defect, not the wrapper.
func TestWrapperIsSound(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return newBroken("") })
}

// TestSuiteCatchesDefects shows that the suite can fail: each defect fails the subtests of the
// rule it breaks.
func TestSuiteCatchesDefects(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("in the child")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	failLine := regexp.MustCompile(`--- FAIL: TestBroken/(\S+)`)
	for defect, wantFailed := range defects {
		t.Run(defect, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), exe, "-test.run=^TestBroken$", "-test.count=1", "-test.timeout=2m")
			cmd.Env = append(os.Environ(), childEnv+"="+defect)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a store that %s:\n%s", defect, out)
			}
			failed := map[string]bool{}
			for _, m := range failLine.FindAllStringSubmatch(string(out), -1) {
				failed[m[1]] = true
			}
			if len(failed) == 0 {
				t.Fatalf("child failed without a failing subtest:\n%s", out)
			}
			for _, name := range wantFailed {
				if !failed[name] {
					t.Errorf("defect %s: subtest %s did not fail; failed: %s", defect, name, strings.Join(keys(failed), " "))
				}
			}
		})
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
