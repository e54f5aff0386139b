package campaign

import (
	"cmp"
	"fmt"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/proctest"
)

// checkRanked holds the ranked faults to their rules on the leadership log (lines) and the
// requests to hand over the workers reported (asks), and returns the faults with their
// takeovers measured on the log, and the violations:
//
//   - health-leader: another instance leads within healthBound of the instant the leader's
//     check started failing (U2), when it led then;
//   - preempt: the joiner leads within preemptBound of its ready line (Q2, Q3), and asks no
//     holder to hand over before its stability window has passed since its process started
//     (Q2);
//   - health-leader, health-follower: the target asks no holder to hand over while its check
//     fails (Q2, U1), from R after the instant it started failing (the first failed check
//     comes within R, U1) to the instant it passed again;
//   - health-all: while every check fails, from the leader's failure to its recovery, nobody
//     asks to lead and the leader does not hand over (U3).
//
// A handover owed and not seen before faultsEnd is a violation once its bound has passed.
func checkRanked(o Options, lines []proctest.Line, asks []askLine, faults []Fault, faultsEnd int64) (out []Fault, violations []string) {
	ivs, _ := proctest.Intervals(lines) // a log that does not make intervals is analyze's violation
	out = append([]Fault(nil), faults...)
	for i := range out {
		f := &out[i]
		what := fmt.Sprintf("fault %d (%s of %s at %d): ", f.N, f.Kind, f.Target, f.Start)
		end := f.End
		if end == 0 {
			end = faultsEnd // the run ended during the fault
		}
		switch f.Kind {
		case HealthLeader, HealthFollower:
			for _, a := range asks {
				if a.Instance == f.Target && a.T >= f.Start+int64(o.RenewInterval+o.Slack) && a.T <= end {
					violations = append(violations, what+fmt.Sprintf("it asked %s to hand over at %d, %v after its check started failing (Q2, U1: never while its own check fails)",
						a.Holder, a.T, time.Duration(a.T-f.Start)))
				}
			}
		case HealthAll:
			if !leadingAt(ivs, f.Target, f.Start) {
				continue // it had lost the lease before: nothing to keep
			}
			for _, a := range asks {
				if a.T >= f.Start && a.T <= end {
					violations = append(violations, what+fmt.Sprintf("%s asked %s to hand over at %d while every check failed (Q2, U1, U3)", a.Instance, a.Holder, a.T))
				}
			}
			for _, l := range lines {
				if l.T < f.Start || l.T > end {
					continue
				}
				if l.Kind == proctest.KindUnlead && l.Instance == f.Target && l.Reason == cluster.ReasonResign {
					violations = append(violations, what+fmt.Sprintf("it handed over at %d while every candidate's check failed (U3: the leader keeps leading)", l.T))
				}
			}
		case Preempt:
			if f.Joiner == "" || f.End == 0 {
				continue // the run ended before the joiner started
			}
			// Its window began after its process did: an ask before then + the window is early,
			// however late the process ran (its ready line may be written after the window began).
			began := cmp.Or(f.Spawned, f.End)
			for _, a := range asks {
				if a.Instance == f.Joiner && a.T < began+int64(o.StabilityWindow) {
					violations = append(violations, what+fmt.Sprintf("%s asked %s to hand over %v after its process started, within its stability window %v (Q2)",
						f.Joiner, a.Holder, time.Duration(a.T-began), o.StabilityWindow))
				}
			}
		}
		var t *Takeover
		switch f.Kind {
		case HealthLeader:
			if !leadingAt(ivs, f.Target, f.Start) {
				f.Takeover = nil // it had lost the lease before its check failed: nothing to hand over
				continue
			}
			t = healthHandover(o, lines, *f)
		case Preempt:
			if f.Joiner == "" || f.End == 0 {
				continue
			}
			t = preemption(o, lines, *f)
		default:
			continue
		}
		f.Takeover = t
		since := f.Start
		if f.Kind == Preempt {
			since = f.End
		}
		switch {
		case t.To == "" && since+int64(t.Bound) <= faultsEnd:
			t.Took = time.Duration(faultsEnd - since)
			violations = append(violations, what+fmt.Sprintf("no %s by the end of the faults, %v after %s, beyond the bound %v",
				handoverWord(f.Kind), t.Took, t.Since, t.Bound))
		case t.To == "":
			f.Takeover = nil // the faults ended before the bound
		case t.Over():
			violations = append(violations, what+fmt.Sprintf("%s led %v after %s, beyond the bound %v (%s)",
				t.To, t.Took, t.Since, t.Bound, ruleOf(f.Kind)))
		}
	}
	return out, violations
}

func handoverWord(k Kind) string {
	if k == Preempt {
		return "preemption"
	}
	return "handover to a healthy candidate"
}

func ruleOf(k Kind) string {
	if k == Preempt {
		return "Q2, Q3"
	}
	return "U2"
}

// healthHandover measures the handover after f, a health-leader fault: from the instant the
// leader's check started failing to the first lead line of another instance, bounded by
// healthBound (U2). To is "" when there is none in lines.
func healthHandover(o Options, lines []proctest.Line, f Fault) *Takeover {
	t := &Takeover{From: f.Target, Since: "its health check started failing", Bound: healthBound(o)}
	for _, l := range lines {
		// The earliest: a frozen worker's lines come late in the log.
		if l.Kind == proctest.KindLead && l.Instance != f.Target && l.T > f.Start && (t.To == "" || time.Duration(l.T-f.Start) < t.Took) {
			t.To, t.Took = l.Instance, time.Duration(l.T-f.Start)
		}
	}
	return t
}

// preemption measures the preemption after f, a preempt fault: from the joiner's start to its
// first lead line, bounded by preemptBound (Q2, Q3). To is "" when there is none in lines.
func preemption(o Options, lines []proctest.Line, f Fault) *Takeover {
	t := &Takeover{From: f.Via, Since: f.Joiner + " started (its stability window began)", Bound: preemptBound(o)}
	for _, l := range lines {
		if l.Kind == proctest.KindLead && l.Instance == f.Joiner && l.T > f.End && (t.To == "" || time.Duration(l.T-f.End) < t.Took) {
			t.To, t.Took = l.Instance, time.Duration(l.T-f.End)
		}
	}
	return t
}

// leadingAt reports whether id's leadership, by the intervals, is on at instant at.
func leadingAt(ivs []proctest.Interval, id string, at int64) bool {
	for _, iv := range ivs {
		if iv.Instance == id && iv.Start <= at && at < iv.End {
			return true
		}
	}
	return false
}
