package campaign

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// KindStats sums up the faults of one kind.
type KindStats struct {
	Kind      Kind
	Count     int
	Takeovers []time.Duration // measured, sorted
	Bound     time.Duration   // 0 when not bounded
	Over      int             // takeovers beyond the bound
	// Leaderless is the longest time without a leader from a fault of the kind to the next
	// fault; AfterStore, for a member's fault, its part after the store answered again.
	Leaderless time.Duration
	AfterStore time.Duration
	// Unrecovered counts the faults the cluster did not recover from within 30 s (not
	// bound-checked; the campaign restarted the cluster).
	Unrecovered int
}

// ByKind returns the faults' figures per kind, in the order of Kinds.
func (r *Report) ByKind() []KindStats {
	var out []KindStats
	for _, k := range kindsOf(r.Network, r.Cluster != nil, r.Ranked) {
		ks := KindStats{Kind: k}
		if clusterKind(k) {
			ks.Bound = clusterBound(Options{LeaseDuration: r.LeaseDuration, RenewInterval: r.RenewInterval, Slack: r.Slack}, k)
		}
		for _, f := range r.Faults {
			if f.Kind != k {
				continue
			}
			ks.Count++
			if f.Unrecovered {
				ks.Unrecovered++
				continue // its times are the cluster's restart's, not the fault's
			}
			ks.Leaderless = max(ks.Leaderless, f.Leaderless)
			ks.AfterStore = max(ks.AfterStore, f.AfterStore)
			if t := f.Takeover; t != nil {
				ks.Takeovers = append(ks.Takeovers, t.Took)
				ks.Bound = max(ks.Bound, t.Bound)
				if t.Over() {
					ks.Over++
				}
			}
		}
		slices.Sort(ks.Takeovers)
		out = append(out, ks)
	}
	return out
}

// MissingKinds returns the kinds of the backend's schedule no fault of the report was of, but
// for the failovers the cluster turned out not to support (not injected). Every campaign runs
// every kind once before it may end, so a kind missing from a finished run means it was
// given up on or the run stopped early.
func (r *Report) MissingKinds() []Kind {
	var out []Kind
	for _, k := range kindsOf(r.Network, r.Cluster != nil, r.Ranked) {
		if r.Cluster != nil && slices.Contains(r.Cluster.NoFailover, k) {
			continue
		}
		if !slices.ContainsFunc(r.Faults, func(f Fault) bool { return f.Kind == k }) {
			out = append(out, k)
		}
	}
	return out
}

// Name names the campaign in the report: its backend, with "-locker" in the Locker mode,
// "-partitions" in the partitions mode and "-ranked" in the Ranked mode.
func (r *Report) Name() string {
	switch {
	case r.Locker:
		return r.Backend + "-locker"
	case r.Partitions > 0:
		return r.Backend + "-partitions"
	case r.Ranked:
		return r.Backend + "-ranked"
	}
	return r.Backend
}

// Failed reports whether the campaign broke a rule.
func (r *Report) Failed() bool { return len(r.Violations) > 0 }

// Overlaps outside pauses, the violations among them.
func (r *Report) overlapsOutsidePauses() int {
	n := 0
	for _, o := range r.Overlaps {
		if !o.InPause {
			n++
		}
	}
	return n
}

func (r *Report) maxTakeover(kinds ...Kind) (time.Duration, time.Duration) {
	var took, bound time.Duration
	for _, f := range r.Faults {
		if f.Takeover != nil && slices.Contains(kinds, f.Kind) && f.Takeover.Took > took {
			took, bound = f.Takeover.Took, f.Takeover.Bound
		}
	}
	return took, bound
}

// worst formats the longest takeover and its bound, "-" when there was none.
func worst(took, bound time.Duration) string {
	if bound == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (%s)", ms(took), ms(bound))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

// WriteMarkdown writes the report of one or more campaigns: a summary table, then per backend
// the figures per fault kind, the checks and the timeline picture (svgs maps a report's Name,
// its backend, to the path of its SVG, relative to the Markdown file; may be nil).
func WriteMarkdown(w io.Writer, command string, reps []*Report, svgs map[string]string) error {
	var b strings.Builder
	b.WriteString("# leasehold fault campaign\n\n")
	if command != "" {
		fmt.Fprintf(&b, "Command: `%s`\n\n", command)
	}
	b.WriteString("All times on the host's CLOCK_MONOTONIC, shared by the runner and the workers. ")
	b.WriteString("Takeover bounds: L + R after a crash, pause or partition of the leader (from its last renewal, E6), ")
	b.WriteString("R after a clean stop (from its release, E7), each plus the slack. ")
	b.WriteString("Unbounded rows: after latency or a reset, a change of leader is timed from the fault; after an outage, ")
	b.WriteString("from the backend's return to the next leader (the clients' reconnection schedules included).\n\n")
	b.WriteString("| backend | run | faults | overlaps outside pauses | accepted stale actions | stale actions rejected | actions accepted | worst crash takeover (bound) | worst clean-stop takeover (bound) | longest leaderless, backend up | violations |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range reps {
		fmt.Fprintf(&b, "| %s | %v | %d | %d | %d | %d | %d | %s | %s | %s | %d |\n",
			r.Name(), time.Duration(r.FaultsEnd-r.Start).Round(time.Second), len(r.Faults), r.overlapsOutsidePauses(),
			r.Actions.AcceptedStale, r.Actions.StaleRejected, r.Actions.Accepted,
			worst(r.maxTakeover(KillLeader, PauseLeader, PartitionLeader)), worst(r.maxTakeover(StopLeader)),
			ms(r.LongestLeaderless), len(r.Violations))
	}
	for _, r := range reps {
		fmt.Fprintf(&b, "\n## %s\n\n", r.Name())
		fmt.Fprintf(&b, "Seed %d, %d instances, L = %v, R = %v, slack %v, %v of faults.\n\n",
			r.Seed, r.Instances, r.LeaseDuration, r.RenewInterval, r.Slack, time.Duration(r.FaultsEnd-r.Start).Round(time.Second))
		if r.Ranked {
			fmt.Fprintf(&b, "Ranked: the workers of slots 1 to %d have priorities 1 to %d, a stability window of %v and a health check the runner makes fail; a leader is unhealthy after %d failed checks. %d requests to hand over written. Bounds, plus the slack: health-leader, from the instant the leader's check was made to fail to another leader, %d R + 3 R (U2); preempt, from the joiner's start to its leadership, the window + 2 R (Q2, Q3); health-all, the leader keeps leading while every check fails (U3); no request within a window or from a failing candidate (Q2, U1). A crash, pause or partition of the leader is timed from its last renewal or the last request to hand over on its record, whichever is later (R1, E6).\n\n",
				r.Instances, slotPriority(r.Instances), r.StabilityWindow, r.HealthFailures, r.Asks, r.HealthFailures)
		}
		if p := svgs[r.Name()]; p != "" {
			fmt.Fprintf(&b, "![timeline of %s](%s)\n\n", r.Name(), p)
		}
		if c := r.Cluster; c != nil {
			fmt.Fprintf(&b, "Cluster: %s, members %s.", c.Backend, strings.Join(c.Members, ", "))
			if len(c.NoFailover) > 0 {
				fmt.Fprintf(&b, " Not supported by the cluster, not injected: %v.", c.NoFailover)
			}
			if c.ManualFailover {
				b.WriteString(" The cluster has no automatic failover: after a kill or pause of its primary it has no primary until that member runs again (restarted in its role) or a failover fault promotes the standby, so the time without a leader from such a fault is the store's own, reported and not bounded; the bound applies from the store's return.")
			}
			b.WriteString(" A member's fault is timed from its start; the takeovers of its row are the times without a leader once the store answered again (the fault lifted and the cluster led by a member), bounded by L + R plus the slack, except after a restart of the whole cluster.")
			if n, longest := r.stalls(); n > 0 {
				fmt.Fprintf(&b, " After the store answered again, and through the faults of the leader, the runner saw it stall %d times (its probe, a write through every member, took longer than the slack or failed; the longest %s): a time without a leader, or a takeover, across a stall is timed from the stall's end.", n, ms(longest))
			}
			b.WriteString("\n\n")
		}
		if r.Stopped != "" {
			fmt.Fprintf(&b, "The faults stopped early: %s.\n\n", r.Stopped)
		}
		// Only a cluster has faults it may not recover from.
		if r.Cluster != nil {
			b.WriteString("| fault | count | not recovered | takeovers | min | median | max | bound | beyond bound | longest leaderless |\n|---|---|---|---|---|---|---|---|---|---|\n")
		} else {
			b.WriteString("| fault | count | takeovers | min | median | max | bound | beyond bound | longest leaderless |\n|---|---|---|---|---|---|---|---|---|\n")
		}
		for _, k := range r.ByKind() {
			fmt.Fprintf(&b, "| %s | %d |", k.Kind, k.Count)
			if r.Cluster != nil {
				fmt.Fprintf(&b, " %d |", k.Unrecovered)
			}
			fmt.Fprintf(&b, " %d |", len(k.Takeovers))
			if n := len(k.Takeovers); n > 0 {
				fmt.Fprintf(&b, " %s | %s | %s |", ms(k.Takeovers[0]), ms(k.Takeovers[n/2]), ms(k.Takeovers[n-1]))
			} else {
				b.WriteString(" - | - | - |")
			}
			if k.Bound > 0 {
				fmt.Fprintf(&b, " %s | %d |", ms(k.Bound), k.Over)
			} else {
				b.WriteString(" (not bounded) | - |")
			}
			fmt.Fprintf(&b, " %s |\n", ms(k.Leaderless))
		}
		for _, f := range r.Faults {
			if !f.Unrecovered {
				continue
			}
			then := "the campaign restarted every member and went on"
			if !f.Restarted {
				then = "a restart of every member did not bring it back either: the run ended"
			}
			fmt.Fprintf(&b, "- fault %d (%s of %s): the cluster did not recover within 30 s (%s); %s; not bound-checked\n",
				f.N, f.Kind, cmp.Or(f.Target, "the cluster"), strings.ReplaceAll(f.UnrecoveredWhy, "\n", " "), then)
		}
		inPause := len(r.Overlaps) - r.overlapsOutsidePauses()
		fmt.Fprintf(&b, "\n- leadership intervals: %d; overlaps outside pauses: **%d** (inside SIGSTOP pauses, from late log lines: %d)\n", len(r.Intervals), r.overlapsOutsidePauses(), inPause)
		fmt.Fprintf(&b, "- actions: %d sent, %d accepted; accepted from a stale term: **%d**; sent outside the sender's leadership: **%d**; stale rejected by fencing: %d; accepted while a newer term already led but had not acted yet: %d\n",
			r.Actions.Total, r.Actions.Accepted, r.Actions.AcceptedStale, r.Actions.OutsideLeadership, r.Actions.StaleRejected, r.Actions.LateAccepted)
		fmt.Fprintf(&b, "- longest time without a leader while the backend was up: %s, after %s\n", ms(r.LongestLeaderless), orNone(r.LeaderlessAfter))
		if len(r.Violations) == 0 {
			b.WriteString("- violations: none\n")
		} else {
			fmt.Fprintf(&b, "- violations: **%d**\n", len(r.Violations))
			for _, v := range r.Violations {
				fmt.Fprintf(&b, "  - %s\n", strings.ReplaceAll(v, "\n", " "))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orNone(s string) string {
	if s == "" {
		return "the start"
	}
	return s
}

// WriteFiles writes report.md, report.json and timeline-<backend>.svg for reps into dir.
func WriteFiles(dir, command string, reps []*Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	svgs := map[string]string{}
	for _, r := range reps {
		name := "timeline-" + r.Name() + ".svg"
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		err = WriteSVG(f, r)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("campaign: %s: %w", name, err)
		}
		svgs[r.Name()] = name
	}
	var md strings.Builder
	if err := WriteMarkdown(&md, command, reps, svgs); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(reps, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.json"), append(js, '\n'), 0o644)
}

// stalls counts the stalls of the store the runner saw (after it answered again, and through
// the faults of the leader), and gives the longest.
func (r *Report) stalls() (n int, longest time.Duration) {
	for _, f := range r.Faults {
		for _, s := range f.Stalls {
			n++
			longest = max(longest, time.Duration(s[1]-s[0]))
		}
	}
	return n, longest
}
