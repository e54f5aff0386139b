package campaign

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/proctest"
)

// TestTraceWindowQuotesTheWorkersInOrder: the traces of two workers, written through their
// observers, come back merged in time order, limited to the window, with what each event
// carried; the events that say nothing of the record are left out.
func TestTraceWindowQuotesTheWorkersInOrder(t *testing.T) {
	dir := t.TempDir()
	a, b := traceObserver("w1.1", dir), traceObserver("w2.1", dir)
	before := proctest.Now()
	a(cluster.Event{Kind: cluster.AttemptSucceeded, Holder: "w1.1", Term: 7, Duration: 3 * time.Millisecond})
	time.Sleep(time.Millisecond) // distinct times on the shared clock
	from := proctest.Now()
	b(cluster.Event{Kind: cluster.ObservedRevision, Holder: "w1.1", Term: 7})
	b(cluster.Event{Kind: cluster.ObservedLeader, Holder: "w1.1"})
	a(cluster.Event{Kind: cluster.AttemptFailed, Reason: cluster.ReasonTimeout, Err: errors.New("x y")})
	b(cluster.Event{Kind: cluster.BecameLeader, Term: 8})
	to := proctest.Now()
	time.Sleep(time.Millisecond)
	a(cluster.Event{Kind: cluster.StoppedLeading, Reason: cluster.ReasonTakenBy})

	got := traceWindow(dir, from, to)
	want := []string{
		"w2.1 observed_revision holder=w1.1 term=7",
		"w1.1 attempt_failed reason=timeout",
		"w2.1 became_leader term=8",
	}
	lines := strings.Split(strings.TrimSpace(got), "\n")[1:]
	if len(lines) != len(want) {
		t.Fatalf("window %d..%d (written from %d):%s\nwant %d lines", from, to, before, got, len(want))
	}
	for i, w := range want {
		if !strings.HasSuffix(lines[i], w) {
			t.Errorf("line %d = %q, want it to end with %q", i, lines[i], w)
		}
	}
	if all := traceWindow(dir, before, proctest.Now()); !strings.Contains(all, "w1.1 attempt_succeeded holder=w1.1 term=7 took=3ms") {
		t.Errorf("the whole trace lacks the first attempt with its duration:%s", all)
	}
	if traceWindow(t.TempDir(), from, to) != "" {
		t.Error("a directory without traces quotes something")
	}
}

// TestTraceObserverWithoutADirectory: a worker started without a trace directory writes
// nothing, and no file appears where it runs.
func TestTraceObserverWithoutADirectory(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	traceObserver("w1.1", "")(cluster.Event{Kind: cluster.BecameLeader, Term: 1})
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
		t.Errorf("files written: %v", m)
	}
	if _, err := os.Stat(filepath.Join(dir, "trace-w1.1.log")); !os.IsNotExist(err) {
		t.Errorf("trace file: %v", err)
	}
}
