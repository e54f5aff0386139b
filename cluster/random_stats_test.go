package cluster

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// randomStats adds up what the seeds covered.
type randomStats struct {
	mu                               sync.Mutex
	seeds                            int
	fake                             time.Duration
	steps, boundSteps                int64
	attempts, writes, zombieWrites   int
	leaderships, restarts            int
	crashes, crashesOfLeader         int
	stops, stopsOfLeader, stopErrors int
	counts                           map[string]int
	takeovers                        map[string]int
	maxTakeover                      map[string]time.Duration
	limits                           map[string]time.Duration
}

func newRandomStats() *randomStats {
	return &randomStats{counts: map[string]int{}, takeovers: map[string]int{}, maxTakeover: map[string]time.Duration{}, limits: map[string]time.Duration{}}
}

func (st *randomStats) count(k string, n int) { st.counts[k] += n }

func (st *randomStats) takeover(kind string, d, limit time.Duration) {
	st.takeovers[kind]++
	// The bound of the latest takeover: with clocks of their own (M1) each instance has its own.
	if d >= st.maxTakeover[kind] {
		st.maxTakeover[kind], st.limits[kind] = d, limit
	}
}

func (st *randomStats) add(o *randomStats) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.seeds += o.seeds
	st.fake += o.fake
	st.steps += o.steps
	st.boundSteps += o.boundSteps
	st.attempts += o.attempts
	st.writes += o.writes
	st.zombieWrites += o.zombieWrites
	st.leaderships += o.leaderships
	st.restarts += o.restarts
	st.crashes += o.crashes
	st.crashesOfLeader += o.crashesOfLeader
	st.stops += o.stops
	st.stopsOfLeader += o.stopsOfLeader
	st.stopErrors += o.stopErrors
	for k, v := range o.counts {
		st.counts[k] += v
	}
	for k, v := range o.takeovers {
		st.takeovers[k] += v
		if o.maxTakeover[k] >= st.maxTakeover[k] {
			st.maxTakeover[k], st.limits[k] = o.maxTakeover[k], o.limits[k]
		}
	}
}

func (st *randomStats) String() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%d seeds, %.0f fake hours, %d steps (%d with a liveness bound armed), %d attempts, %d lease writes (%d by crashed instances' calls in flight), %d leaderships\n",
		st.seeds, st.fake.Hours(), st.steps, st.boundSteps, st.attempts, st.writes, st.zombieWrites, st.leaderships)
	fmt.Fprintf(&b, "  %d crashes (%d of the leader), %d stops (%d of the leader, %d returned an error), %d restarts\n",
		st.crashes, st.crashesOfLeader, st.stops, st.stopsOfLeader, st.stopErrors, st.restarts)
	faults := 0
	keys := make([]string, 0, len(st.counts))
	for k, v := range st.counts {
		keys = append(keys, k)
		if strings.HasPrefix(k, "fault: ") {
			faults += v
		}
	}
	slices.Sort(keys)
	fmt.Fprintf(&b, "  %d faults injected\n", faults)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s: %d\n", k, st.counts[k])
	}
	for _, k := range []string{"L+R", "L", "R"} {
		fmt.Fprintf(&b, "  takeovers after a leaderless time bounded by %s = %v: %d, the latest %v after the bound's reference\n",
			k, st.limits[k], st.takeovers[k], st.maxTakeover[k])
	}
	return b.String()
}
