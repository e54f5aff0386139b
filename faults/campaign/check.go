package campaign

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/proctest"
)

// Report is the outcome of one campaign over one backend. Times are on the shared clock
// (proctest.Now, CLOCK_MONOTONIC on Linux) in nanoseconds.
type Report struct {
	Backend       string        `json:"backend"`
	Seed          uint64        `json:"seed"`
	Instances     int           `json:"instances"`
	LeaseDuration time.Duration `json:"lease_duration_ns"`
	RenewInterval time.Duration `json:"renew_interval_ns"`
	Slack         time.Duration `json:"slack_ns"`
	Network       bool          `json:"network"`          // the proxy faults applied
	Locker        bool          `json:"locker,omitempty"` // the workers held the lease through a locker.Locker
	// Partitions is the partitions mode's number of partitions (0: not that mode), and
	// PartitionLeaderships the ownerships of every partition that checkPartitions checked.
	Partitions           int `json:"partitions,omitempty"`
	PartitionLeaderships int `json:"partition_leaderships,omitempty"`
	// PartitionTakeovers are the takeovers of every partition that checkPartitionTakeovers
	// held to a bound: one per fault and partition its target held.
	PartitionTakeovers []PartitionTakeover `json:"partition_takeovers,omitempty"`
	// Ranked: every worker had a priority, the stability window and a health check the
	// runner controlled (Options.Ranked); Asks counts the requests to hand over they wrote.
	Ranked          bool          `json:"ranked,omitempty"`
	StabilityWindow time.Duration `json:"stability_window_ns,omitempty"`
	HealthFailures  int           `json:"health_failures,omitempty"`
	Asks            int           `json:"asks,omitempty"`
	// Cluster describes the store's cluster when the backend is one (RegisterClusterBackend):
	// the members' faults applied.
	Cluster   *ClusterInfo `json:"cluster,omitempty"`
	Start     int64        `json:"start"`
	FaultsEnd int64        `json:"faults_end"`
	End       int64        `json:"end"`

	Faults    []Fault             `json:"faults"`
	Intervals []proctest.Interval `json:"intervals"`
	Overlaps  []Overlap           `json:"overlaps"`
	Actions   ActionStats         `json:"actions"`
	// BadActions are the actions that broke a rule (accepted stale, sent outside leadership).
	BadActions []BadAction `json:"bad_actions,omitempty"`
	// LongestLeaderless is the longest time without a leader while the backend was up (no
	// outage, no member's fault before the store answered again), between the first leader and the end of the faults; LeaderlessAfter names the
	// fault before it.
	LongestLeaderless time.Duration `json:"longest_leaderless_ns"`
	LeaderlessAt      int64         `json:"leaderless_at"`
	LeaderlessAfter   string        `json:"leaderless_after"`

	// Stopped says why the faults ended before Duration and MinFaults were reached: the
	// run reached MaxDuration, or could not go on (an election that did not settle); "" when
	// they did not.
	Stopped string `json:"stopped,omitempty"`

	// Violations are every broken rule, in words; the campaign fails when there is one.
	Violations []string `json:"violations"`
}

// Overlap is a time two instances both led, by their leadership lines.
type Overlap struct {
	A, B   proctest.Interval
	Length time.Duration `json:"length_ns"`
	// InPause: one of the two instances was frozen by SIGSTOP around its interval, which can
	// make its logged deadline late (see explainedByPause); not counted as a violation.
	InPause bool `json:"in_pause"`
}

// ActionStats count the actions on the fenced resource.
type ActionStats struct {
	Total    int `json:"total"`
	Accepted int `json:"accepted"`
	// StaleRejected: rejected because a higher term had acted: fencing saved the day.
	StaleRejected int `json:"stale_rejected"`
	// AcceptedStale: accepted although a higher term had been accepted before (must be 0).
	AcceptedStale int `json:"accepted_stale"`
	// OutsideLeadership: stamped by a worker outside its own leadership of that term, by the
	// leadership lines (must be 0: a worker acts only while IsLeader, W7, with its term, W8).
	OutsideLeadership int `json:"outside_leadership"`
	// LateAccepted: accepted while a newer term already led, because that leader had not acted
	// yet: what fencing cannot know. Counted, not a violation.
	LateAccepted int `json:"late_accepted"`
}

// BadAction is an action that broke a rule, and which.
type BadAction struct {
	Action
	Rule string `json:"rule"`
}

// analyze checks the leadership lines and the actions of a campaign.
func analyze(o Options, network bool, lines []proctest.Line, actions []Action, faults []Fault, start, faultsEnd, end int64) *Report {
	faults = slices.Clone(faults) // the times without a leader are filled in below
	rep := &Report{
		Backend: o.Backend, Seed: o.Seed, Instances: o.Instances,
		LeaseDuration: o.LeaseDuration, RenewInterval: o.RenewInterval, Slack: o.Slack, Network: network,
		Start: start, FaultsEnd: faultsEnd, End: end, Faults: faults, Locker: o.Locker, Partitions: o.Partitions,
		Ranked: o.Ranked, StabilityWindow: o.StabilityWindow, HealthFailures: o.HealthFailures,
	}
	violate := func(format string, args ...any) {
		rep.Violations = append(rep.Violations, fmt.Sprintf(format, args...))
	}
	ivs, err := proctest.Intervals(lines)
	if err != nil {
		violate("the leadership log does not make intervals: %v", err)
	}
	rep.Intervals = ivs
	var vs []string
	rep.Overlaps, vs = exclusive(ivs, faults, o.LeaseDuration, "")
	rep.Violations = append(rep.Violations, vs...)
	rep.Actions, rep.BadActions = checkActions(ivs, actions)
	for _, b := range rep.BadActions {
		violate("action of %s term %d sent at %d, received at %d (accepted %v): %s", b.Instance, b.Term, b.Sent, b.Recv, b.Accepted, b.Rule)
	}
	gaps := leaderlessGaps(ivs, faultsEnd)
	for i := range faults {
		f := &faults[i]
		f.Leaderless, f.AfterStore = 0, 0
		if clusterKind(f.Kind) {
			f.Takeover = nil
		}
		next := faultsEnd
		if i+1 < len(faults) {
			next = faults[i+1].Start
		}
		leaderlessAfter(f, gaps, next, ivs)
		if clusterKind(f.Kind) && f.AfterStore > 0 && !f.Unrecovered {
			f.Takeover.Bound = clusterBound(o, f.Kind)
			if f.Takeover.Over() {
				violate("fault %d (%s of %s): no leader for %v after the store answered again, beyond the bound %v",
					f.N, f.Kind, f.Target, f.AfterStore, f.Takeover.Bound)
			}
		}
	}
	rep.LongestLeaderless, rep.LeaderlessAt, rep.LeaderlessAfter = longestLeaderless(ivs, faults, faultsEnd)
	return rep
}

// exclusive checks one lease's leaderships: never two leaders at once outside a pause (E2, E5,
// W7), a new term with each new leader and never a lower one (W8). It returns the overlaps and
// the violations, each starting with what (a partition's name, or "" for the lease).
func exclusive(ivs []proctest.Interval, faults []Fault, l time.Duration, what string) (ovs []Overlap, violations []string) {
	violate := func(format string, args ...any) {
		violations = append(violations, what+fmt.Sprintf(format, args...))
	}
	ovs = overlaps(ivs, faults, l)
	for _, ov := range ovs {
		if !ov.InPause {
			violate("two leaders at once for %v (E2, E5, W7): %v and %v", ov.Length, ov.A, ov.B)
		}
	}
	for i := 1; i < len(ivs); i++ {
		prev, cur := ivs[i-1], ivs[i]
		switch {
		case cur.Term < prev.Term:
			violate("the term went down (W8): %v, then %v", prev, cur)
		case cur.Instance != prev.Instance && cur.Term == prev.Term:
			violate("the leader changed but not the term (W8): %v, then %v", prev, cur)
		}
	}
	return ovs, violations
}

// checkPartitions checks each partition's leaderships (lines[p], from its log) as exclusive
// checks the lease's, and returns how many leaderships it checked and the violations, each
// naming its partition (D1, D8).
func checkPartitions(lines [][]proctest.Line, faults []Fault, l time.Duration) (leaderships int, violations []string) {
	for p, ls := range lines {
		what := fmt.Sprintf("partition %d: ", p)
		ivs, err := proctest.Intervals(ls)
		if err != nil {
			violations = append(violations, what+fmt.Sprintf("the leadership log does not make intervals: %v", err))
			continue
		}
		leaderships += len(ivs)
		_, vs := exclusive(ivs, faults, l, what)
		violations = append(violations, vs...)
	}
	return leaderships, violations
}

// PartitionTakeover is the takeover of one partition after a fault of the worker that held it.
type PartitionTakeover struct {
	Fault     int `json:"fault"` // Fault.N
	Partition int `json:"partition"`
	Takeover
}

// checkPartitionTakeovers holds every partition to the takeover bounds the driver holds
// partition 0 to as the lease (crashTakeover, and inject's stop-leader case), so that a bound
// kept by partition 0 alone cannot hide a partition left behind (D8). It returns the
// takeovers it measured and the violations, each naming its partition.
//
// A fault's target holds a partition when, by the partition's log, an ownership of it is open
// at the fault, or it resigned one (a handover) that no other worker has taken yet: a release
// that never landed leaves the partition to the bound of a crash. For each such partition:
//
//   - a kill, and a pause or a cut that lasted the whole crash bound (every leader's; a
//     follower's when long enough), owe another worker's ownership within L + R + slack of the
//     target's last renewal, or of the fault when an attempt may have been in flight then
//     (crashTakeover's rule) or a handover was under way (its renewals are no longer logged
//     for that partition); a pause over a lock-file backend owes it only when another worker
//     owned the partition before the pause ended (pauseTakeover's rule);
//   - a stop owes it within R + slack of the target's release, when the release was clean
//     (cleanRelease); an ownership lost before the signal landed has no handover to measure.
//
// A takeover owed and never seen before faultsEnd is a violation once its bound has passed.
func checkPartitionTakeovers(o Options, lines [][]proctest.Line, faults []Fault, faultsEnd int64) (tos []PartitionTakeover, violations []string) {
	crashBound := o.LeaseDuration + o.RenewInterval + o.Slack
	stopBound := o.RenewInterval + o.Slack
	half := (o.LeaseDuration + o.RenewInterval) / 2
	for _, f := range faults {
		paused := f.Kind == PauseLeader || f.Kind == PauseFollower
		switch f.Kind {
		case KillLeader, KillFollower, PauseLeader, PauseFollower, PartitionLeader, PartitionFollower, StopLeader:
		default:
			continue
		}
		if f.Target == "" || f.Start == 0 {
			continue
		}
		end := f.End
		if end == 0 {
			end = faultsEnd // the run ended during the fault
		}
		for p, ls := range lines {
			h, ok := heldAt(ls, f.Target, f.Start)
			if !ok {
				continue
			}
			what := fmt.Sprintf("partition %d: fault %d (%s of %s at %d): ", p, f.N, f.Kind, f.Target, f.Start)
			next, found := nextOwner(ls, f.Target, h.lead.T)
			var since int64
			var label string
			var bound time.Duration
			if f.Kind == StopLeader {
				rel, ok := h.release(ls)
				if !ok {
					violations = append(violations, what+fmt.Sprintf("no line ends %s's ownership of term %d after SIGTERM (E7)", f.Target, h.lead.Term))
					continue
				}
				if !cleanRelease(rel.Reason) {
					continue // it lost the partition before the signal landed
				}
				since, label, bound = rel.T, fmt.Sprintf("it released it (%s)", rel.Reason), stopBound
			} else {
				bound = crashBound
				since, label = f.Start, "the fault (a handover of it was under way)"
				if h.released == nil {
					limit := end
					if found {
						limit = min(limit, next.T)
					}
					last := h.lastRenewal(ls, limit)
					since, label = last.T, "its last renewal"
					if f.Start >= last.Deadline-int64(half)+int64(o.RenewInterval)-int64(25*time.Millisecond) {
						since, label = f.Start, "the fault (an attempt may have been in flight)"
					}
				}
				switch {
				case paused && lockFileBackend(o.Backend):
					// The frozen worker may hold the store's file lock: nobody can take
					// anything over until it resumes.
					if !found || next.T >= end {
						continue
					}
				case f.Kind != KillLeader && f.Kind != KillFollower && end-since < int64(bound):
					continue // resumed or healed in time to keep it
				}
			}
			t := PartitionTakeover{Fault: f.N, Partition: p, Takeover: Takeover{From: f.Target, To: next.Instance, Since: label, Bound: bound}}
			if !found {
				if since+int64(bound) > faultsEnd {
					continue // the faults ended before the bound
				}
				t.Took = time.Duration(faultsEnd - since)
				tos = append(tos, t)
				violations = append(violations, what+fmt.Sprintf("not owned again by another worker by the end of the faults, %v after %s, beyond the bound %v",
					t.Took, label, bound))
				continue
			}
			t.Took = time.Duration(next.T - since)
			tos = append(tos, t)
			if t.Over() {
				violations = append(violations, what+fmt.Sprintf("%s owned it again %v after %s, %v beyond the bound %v",
					next.Instance, t.Took, label, t.Took-bound, bound))
			}
		}
	}
	return tos, violations
}

// cleanRelease reports whether an ownership that ended with reason was given up by a worker
// stopping cleanly. A stopping partition.Partitions hands each partition it owns to an heir by a
// resign (D7) rather than letting its member lease's stop end it, so the last unlead line of a
// stopped worker's partition says "resign" as often as "stop": both are a clean stop, bounded
// by R (E7).
func cleanRelease(reason string) bool {
	return reason == cluster.ReasonStop || reason == cluster.ReasonResign
}

// heldOwnership is a worker's hold on a partition at an instant, by the partition's log.
type heldOwnership struct {
	id   string
	lead proctest.Line // the lead line that began it
	at   int           // that line's index in the log
	// released is the worker's resign line before the instant, when no other worker has led
	// the partition since: a handover under way.
	released *proctest.Line
}

// heldAt returns id's hold on the partition whose log is ls at instant at: an ownership begun
// at or before at and not ended then, or one it resigned and nobody has taken yet.
func heldAt(ls []proctest.Line, id string, at int64) (heldOwnership, bool) {
	var h heldOwnership
	held := false
	for i, l := range ls {
		if l.T > at {
			continue // the log is in the order of the writes; a frozen worker writes late
		}
		switch {
		case l.Instance == id && l.Kind == proctest.KindLead:
			h, held = heldOwnership{id: id, lead: l, at: i}, true
		case l.Instance == id && l.Kind == proctest.KindUnlead:
			if held && h.released == nil && l.Reason == cluster.ReasonResign {
				h.released = &ls[i]
			} else {
				held = false
			}
		case l.Instance != id && l.Kind == proctest.KindLead && held && h.released != nil:
			held = false // the heir took it
		}
	}
	return h, held
}

// release returns the line that ended h's ownership, whenever it was written.
func (h heldOwnership) release(ls []proctest.Line) (proctest.Line, bool) {
	if h.released != nil {
		return *h.released, true
	}
	for _, l := range ls[h.at+1:] {
		if l.Instance == h.id && l.Kind == proctest.KindUnlead {
			return l, true
		}
	}
	return proctest.Line{}, false
}

// lastRenewal returns h's last lead or renew line before limit.
func (h heldOwnership) lastRenewal(ls []proctest.Line, limit int64) proctest.Line {
	last := h.lead
	for _, l := range ls[h.at+1:] {
		if l.Instance != h.id {
			continue
		}
		if l.Kind == proctest.KindUnlead {
			break
		}
		if l.Kind == proctest.KindRenew && l.T < limit {
			last = l
		}
	}
	return last
}

// nextOwner returns the earliest lead line of a worker other than id after after.
func nextOwner(ls []proctest.Line, id string, after int64) (proctest.Line, bool) {
	var next proctest.Line
	found := false
	for _, l := range ls {
		if l.Kind == proctest.KindLead && l.Instance != id && l.T > after && (!found || l.T < next.T) {
			next, found = l, true
		}
	}
	return next, found
}

// leaderlessGaps returns the times no instance led, between the first leadership and end.
func leaderlessGaps(ivs []proctest.Interval, end int64) [][2]int64 {
	if len(ivs) == 0 {
		return nil
	}
	var gaps [][2]int64
	covered := ivs[0].End
	for _, iv := range ivs[1:] {
		if iv.Start > covered && covered < end {
			gaps = append(gaps, [2]int64{covered, iv.Start})
		}
		covered = max(covered, iv.End)
	}
	return gaps
}

// leaderlessAfter sets f.Leaderless, the longest time without a leader from f's start to next
// (the next fault), and for a member's fault f.AfterStore, its part after the store answered
// again, with the takeover that ended it (who led before, who led next).
func leaderlessAfter(f *Fault, gaps [][2]int64, next int64, ivs []proctest.Interval) {
	for _, g := range gaps {
		if g[1] <= f.Start || g[0] >= next {
			continue
		}
		f.Leaderless = max(f.Leaderless, time.Duration(g[1]-max(g[0], f.Start)))
		// The bounded part ends where the next fault begins: a gap that runs into it (the
		// new raft leader killed or paused just after the store answered) is that fault's
		// from then on, and the store may be down again.
		end := min(g[1], next)
		if !clusterKind(f.Kind) || f.StoreBack == 0 || end <= f.StoreBack {
			continue
		}
		back := effectiveBack(f, end)
		if d := time.Duration(end - max(g[0], back)); d > f.AfterStore {
			f.AfterStore = d
			t := &Takeover{Since: "the store answered again", Took: d}
			if back > f.StoreBack {
				t.Since = "the store answered again after a stall"
			}
			for _, iv := range ivs {
				if iv.End == g[0] {
					t.From = iv.Instance
				}
				if iv.Start == g[1] {
					t.To = iv.Instance
				}
			}
			if g[0] > back {
				t.Since = "it lost its leadership, after the store answered again"
			}
			if end < g[1] {
				t.Since += " (up to the next fault)"
			}
			f.Takeover = t
		}
	}
}

// overlaps returns every pair of intervals of different instances that overlap.
func overlaps(ivs []proctest.Interval, faults []Fault, l time.Duration) []Overlap {
	var out []Overlap
	for i := range ivs {
		for j := range i {
			a, b := ivs[j], ivs[i] // a.Start <= b.Start
			if a.Instance == b.Instance || a.End <= b.Start {
				continue
			}
			ov := Overlap{A: a, B: b, Length: time.Duration(min(a.End, b.End) - b.Start)}
			ov.InPause = explainedByPause(a, faults, l) || explainedByPause(b, faults, l)
			out = append(out, ov)
		}
	}
	return out
}

// explainedByPause reports whether iv's instance was SIGSTOPped around iv: from L before its
// start to its end. A worker's lines estimate each deadline as the event's time minus the
// attempt's duration plus (L+R)/2; a pause between the attempt's answer and the event pushes
// that estimate late by the pause, although the Elector's own deadline (and IsLeader) is not
// moved: an overlap of such an interval is the log's, not the election's. The actions check
// still holds those workers to their real leadership.
func explainedByPause(iv proctest.Interval, faults []Fault, l time.Duration) bool {
	for _, f := range faults {
		if (f.Kind == PauseLeader || f.Kind == PauseFollower) && f.Target == iv.Instance &&
			f.Start < iv.End && f.End > iv.Start-int64(l) {
			return true
		}
	}
	return false
}

// checkActions counts the actions and finds those that break a rule.
func checkActions(ivs []proctest.Interval, actions []Action) (ActionStats, []BadAction) {
	type key struct {
		instance string
		term     uint64
	}
	by := map[key][]proctest.Interval{}
	for _, iv := range ivs {
		by[key{iv.Instance, iv.Term}] = append(by[key{iv.Instance, iv.Term}], iv)
	}
	// Highest term among the intervals started by each interval's start, for LateAccepted.
	starts := slices.Clone(ivs)
	slices.SortFunc(starts, func(a, b proctest.Interval) int { return cmp.Compare(a.Start, b.Start) })
	maxTerm := make([]uint64, len(starts))
	for i, iv := range starts {
		maxTerm[i] = iv.Term
		if i > 0 {
			maxTerm[i] = max(maxTerm[i], maxTerm[i-1])
		}
	}
	var st ActionStats
	var bad []BadAction
	var highest uint64
	for _, a := range actions {
		st.Total++
		inside := false
		for _, iv := range by[key{a.Instance, a.Term}] {
			if iv.Start <= a.Sent && a.Sent <= iv.End {
				inside = true
				break
			}
		}
		if !inside {
			st.OutsideLeadership++
			bad = append(bad, BadAction{a, "sent outside the sender's leadership of that term (W7, W8)"})
		}
		if !a.Accepted {
			if a.Term < highest {
				st.StaleRejected++
			}
			continue
		}
		st.Accepted++
		if a.Term < highest {
			st.AcceptedStale++
			bad = append(bad, BadAction{a, fmt.Sprintf("accepted although term %d had been accepted before (fencing)", highest)})
		}
		highest = max(highest, a.Term)
		if n := sort.Search(len(starts), func(i int) bool { return starts[i].Start >= a.Recv }); n > 0 && maxTerm[n-1] > a.Term {
			st.LateAccepted++
		}
	}
	return st, bad
}

// longestLeaderless returns the longest time no instance led, between the first leadership
// and faultsEnd, leaving out the times the backend was down (a gap that overlaps an outage),
// with when it began and the fault before it.
func longestLeaderless(ivs []proctest.Interval, faults []Fault, faultsEnd int64) (time.Duration, int64, string) {
	if len(ivs) == 0 {
		return 0, 0, ""
	}
	var longest time.Duration
	var at int64
	covered := ivs[0].End
	for _, iv := range ivs[1:] {
		if iv.Start > covered && covered < faultsEnd {
			g0, g1 := covered, iv.Start
			outage := false
			for _, f := range faults {
				if f.Kind == Outage && f.Start < g1 && f.End > g0 ||
					clusterKind(f.Kind) && f.Start < g1 && (effectiveBack(&f, g1) > g0 || f.Unrecovered && f.StoreBack == 0) {
					outage = true // the backend was down, a member of it, or it stalled after
				}
			}
			if d := time.Duration(g1 - g0); !outage && d > longest {
				longest, at = d, g0
			}
		}
		covered = max(covered, iv.End)
	}
	after := ""
	for _, f := range faults {
		if f.Start <= at {
			after = fmt.Sprintf("fault %d (%s %s)", f.N, f.Kind, f.Target)
		}
	}
	return longest, at, after
}
