package campaign

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/leasehold/leasehold/internal/storecluster"
)

// fakeCluster stands for a cluster in the schedule's tests: pick only asks whether there is one.
type fakeCluster struct{ storecluster.Cluster }

// The schedule's kinds: 11 over a store without a network (kills, pauses, a clean stop, the
// watch faults, a clock jump), 16 with one (the proxy's faults too), 15 over a cluster through
// proxies and 10 over one the instances reach directly.
func TestKindsOfTheSchedules(t *testing.T) {
	for _, c := range []struct {
		network, cluster bool
		want             int
	}{{false, false, 11}, {true, false, 16}, {true, true, 15}, {false, true, 10}} {
		if got := len(kindsFor(c.network, c.cluster)); got != c.want {
			t.Errorf("network %v, cluster %v: %d kinds %v, want %d", c.network, c.cluster, got, kindsFor(c.network, c.cluster), c.want)
		}
	}
}

// The first faults of a campaign are every kind of its schedule once, in a random order; a
// kind given up on (its target gone) comes again until it is injected; the run may end only
// once the round is over (roundOver), but for the kinds the backend turned out not to support.
func TestFirstRoundHasEveryKind(t *testing.T) {
	for _, srv := range []Server{{}, {Addr: "127.0.0.1:1"}, {Cluster: fakeCluster{}}, {Cluster: fakeCluster{}, Direct: true}} {
		kinds := kindsFor(srv.network(), srv.Cluster != nil)
		orders := map[string]bool{}
		for s := range uint64(20) {
			d := &driver{srv: srv, rng: rand.New(rand.NewPCG(s, s)), unsupported: map[Kind]bool{}}
			var first []Kind
			for i := 0; !d.roundOver(); i++ {
				if i > 3*len(kinds) {
					t.Fatalf("%+v: the round is not over after %d picks: %v left", srv, i, d.round)
				}
				k := d.pick()
				if i%3 == 1 {
					continue // given up on: no fault recorded
				}
				if k == MemberFailoverLossy && s%2 == 0 {
					d.unsupported[k] = true // as memberFault marks it when the cluster cannot
					continue
				}
				first = append(first, k)
				d.record(Fault{N: len(d.faults) + 1, Kind: k})
			}
			want := slices.Clone(kinds)
			if srv.Cluster != nil && s%2 == 0 {
				want = slices.DeleteFunc(want, func(k Kind) bool { return k == MemberFailoverLossy })
			}
			got := slices.Clone(first)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("%+v: the first round injected %v, want every kind once: %v", srv, first, want)
			}
			orders[string(first[0])+string(first[1])] = true
			rep := &Report{Network: srv.network(), Faults: d.faults}
			if srv.Cluster != nil {
				rep.Cluster = &ClusterInfo{}
				if d.unsupported[MemberFailoverLossy] {
					rep.Cluster.NoFailover = []Kind{MemberFailoverLossy}
				}
			}
			if missing := rep.MissingKinds(); len(missing) > 0 {
				t.Errorf("%+v: MissingKinds after the first round: %v", srv, missing)
			}
			// Past the round, the kinds are drawn at random.
			for range 10 {
				if k := d.pick(); !slices.Contains(kinds, k) || d.unsupported[k] {
					t.Errorf("%+v: picked %s after the round", srv, k)
				}
			}
		}
		if len(orders) < 2 {
			t.Errorf("%+v: the round began the same way for 20 schedules: %v", srv, orders)
		}
	}
}

// MissingKinds names the kinds of the schedule no fault was of, but for the failovers the
// cluster does not support.
func TestMissingKinds(t *testing.T) {
	rep := &Report{Faults: []Fault{{Kind: KillLeader}, {Kind: KillLeader}, {Kind: PauseLeader}}}
	got := rep.MissingKinds()
	want := []Kind{KillFollower, PauseFollower, StopLeader, DropWatch, DelayWatch, DupWatch, ReorderWatch, CutWatch, ClockJump}
	if !slices.Equal(got, want) {
		t.Errorf("MissingKinds() = %v, want %v", got, want)
	}
	rep = &Report{Network: true, Cluster: &ClusterInfo{NoFailover: []Kind{MemberFailoverLossy}}}
	for _, k := range ClusterKinds() {
		if k != MemberFailoverLossy && k != ClusterRestart {
			rep.Faults = append(rep.Faults, Fault{Kind: k})
		}
	}
	if got := rep.MissingKinds(); !slices.Equal(got, []Kind{ClusterRestart}) {
		t.Errorf("cluster: MissingKinds() = %v, want [%s]", got, ClusterRestart)
	}
}
