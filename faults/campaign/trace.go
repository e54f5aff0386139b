package campaign

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/proctest"
)

// envTrace names the directory in which each worker writes its trace (trace-ID.log).
const envTrace = "LEASEHOLD_FAULTS_TRACE"

// traceMaxLines bounds the trace a violation quotes.
const traceMaxLines = 80

// traceObserver writes, into dir/trace-ID.log, one line for each event that says when this
// worker heard of a change of the record or made an attempt, on the shared clock. The
// leadership lines say when a takeover happened; these say why it came when it did: a
// follower that saw the last renewal late, an attempt that waited on the store, an attempt
// that came late. A takeover beyond its bound quotes them (traceWindow). With dir empty, or
// a file that cannot be opened, it writes nothing: the trace explains, it decides nothing.
func traceObserver(id, dir string) func(cluster.Event) {
	if dir == "" {
		return func(cluster.Event) {}
	}
	f, err := os.OpenFile(filepath.Join(dir, "trace-"+id+".log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "faults worker %s: no trace: %v\n", id, err)
		return func(cluster.Event) {}
	}
	return func(ev cluster.Event) {
		switch ev.Kind {
		case cluster.AttemptSucceeded, cluster.AttemptFailed, cluster.WatchedChange, cluster.ObservedRevision,
			cluster.BecameLeader, cluster.StoppedLeading:
		default:
			return
		}
		// One write per line: O_APPEND keeps a line whole.
		_, _ = f.WriteString(traceLine{T: proctest.Now(), Instance: id, Kind: ev.Kind.String(), Holder: ev.Holder,
			Term: ev.Term, Duration: ev.Duration, Reason: ev.Reason}.String() + "\n")
	}
}

// traceLine is one line of a worker's trace.
type traceLine struct {
	T        int64
	Instance string
	Kind     string
	Holder   string
	Term     uint64
	Duration time.Duration
	Reason   string
}

func (l traceLine) String() string {
	return fmt.Sprintf("%d %s %s %s %d %d %s", l.T, l.Instance, l.Kind, orDash(l.Holder), l.Term, l.Duration, orDash(l.Reason))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func parseTraceLine(s string) (traceLine, bool) {
	f := strings.Fields(s)
	if len(f) != 7 {
		return traceLine{}, false
	}
	t, err1 := strconv.ParseInt(f[0], 10, 64)
	term, err2 := strconv.ParseUint(f[4], 10, 64)
	d, err3 := strconv.ParseInt(f[5], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return traceLine{}, false
	}
	undash := func(s string) string { return strings.TrimPrefix(s, "-") }
	return traceLine{T: t, Instance: f[1], Kind: f[2], Holder: undash(f[3]), Term: term, Duration: time.Duration(d), Reason: undash(f[6])}, true
}

// traceWindow returns the workers' trace lines of dir from..to, in time order, each with its
// time after from, as a failure message quotes them ("" when there are none). At most
// traceMaxLines are kept: those closest to to, where a late takeover ends.
func traceWindow(dir string, from, to int64) string {
	paths, _ := filepath.Glob(filepath.Join(dir, "trace-*.log"))
	var ls []traceLine
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if l, ok := parseTraceLine(sc.Text()); ok && l.T >= from && l.T <= to {
				ls = append(ls, l)
			}
		}
		f.Close()
	}
	if len(ls) == 0 {
		return ""
	}
	slices.SortStableFunc(ls, func(a, b traceLine) int { return cmp.Compare(a.T, b.T) })
	if len(ls) > traceMaxLines {
		ls = ls[len(ls)-traceMaxLines:]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n--- the workers' traces (ms after %d):", from)
	for _, l := range ls {
		fmt.Fprintf(&b, "\n%9.1f %s %s", float64(l.T-from)/1e6, l.Instance, l.Kind)
		if l.Holder != "" {
			fmt.Fprintf(&b, " holder=%s", l.Holder)
		}
		if l.Term != 0 {
			fmt.Fprintf(&b, " term=%d", l.Term)
		}
		if l.Duration != 0 {
			fmt.Fprintf(&b, " took=%v", l.Duration.Round(100*time.Microsecond))
		}
		if l.Reason != "" {
			fmt.Fprintf(&b, " reason=%s", l.Reason)
		}
	}
	return b.String()
}
