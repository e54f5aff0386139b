package partition

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// settle applies planPartitions round after round (each round is one R: every member acts on
// its part of the plan) until nothing moves, and returns the rounds it took and every move.
func settle(t *testing.T, members []string, owner []string, maxHandovers int) (rounds int, all []partitionMove) {
	t.Helper()
	for rounds = 0; ; rounds++ {
		moves := planPartitions(members, owner, maxHandovers)
		if len(moves) == 0 {
			return rounds, all
		}
		if rounds > len(owner)+2 {
			t.Fatalf("no settled assignment after %d rounds; last moves %v", rounds, moves)
		}
		seen := map[int]bool{}
		perDonor := map[string]int{}
		for _, m := range moves {
			if seen[m.Partition] {
				t.Fatalf("partition %d moved twice in one round: %v", m.Partition, moves)
			}
			seen[m.Partition] = true
			if owner[m.Partition] != m.From {
				t.Fatalf("move %+v: the partition's owner is %q", m, owner[m.Partition])
			}
			if m.From != "" {
				perDonor[m.From]++
				if maxHandovers > 0 && perDonor[m.From] > maxHandovers {
					t.Fatalf("%s hands over %d partitions in one round, want at most %d (D4)", m.From, perDonor[m.From], maxHandovers)
				}
			}
			owner[m.Partition] = m.To
		}
		all = append(all, moves...)
	}
}

// checkSpread fails unless every partition is owned by a member and owned counts differ by at
// most one (D1).
func checkSpread(t *testing.T, members []string, owner []string) {
	t.Helper()
	count := map[string]int{}
	for p, o := range owner {
		if !slices.Contains(members, o) {
			t.Fatalf("partition %d owned by %q, not a member of %v", p, o, members)
		}
		count[o]++
	}
	lo, hi := len(owner), 0
	for _, m := range members {
		lo, hi = min(lo, count[m]), max(hi, count[m])
	}
	if hi-lo > 1 {
		t.Fatalf("owned counts %v: spread %d, want at most 1", count, hi-lo)
	}
}

func memberNames(n int) []string {
	ms := make([]string, n)
	for i := range ms {
		ms[i] = fmt.Sprintf("node-%d", i)
	}
	return ms
}

// D1: shares add up to K, differ by at most one, and the larger ones go to the members that own
// the most (a fleet at its shares has nothing to move).
func TestD1Shares(t *testing.T) {
	members := []string{"c", "a", "b"}
	got := partitionShares(10, members, map[string]int{"b": 4, "a": 3, "c": 3})
	if got["b"] != 4 || got["a"] != 3 || got["c"] != 3 {
		t.Fatalf("shares = %v, want b 4 (it owns the most), a 3, c 3", got)
	}
	got = partitionShares(10, members, nil)
	if got["a"] != 4 || got["b"] != 3 || got["c"] != 3 {
		t.Fatalf("shares with nothing owned = %v, want the extra one to a (ties by ID)", got)
	}
	if len(partitionShares(5, nil, nil)) != 0 {
		t.Fatal("shares of no member")
	}
}

// D2: from nothing owned, one round assigns every partition, evenly; the weights spread the
// partitions, so no member collects them all.
func TestD2FromNothing(t *testing.T) {
	for _, tc := range []struct{ k, n int }{{1024, 3}, {10000, 10}, {7, 3}, {2, 5}} {
		t.Run(fmt.Sprintf("K%d_N%d", tc.k, tc.n), func(t *testing.T) {
			members := memberNames(tc.n)
			owner := make([]string, tc.k)
			rounds, moves := settle(t, members, owner, 8)
			if rounds != 1 || len(moves) != tc.k {
				t.Fatalf("%d rounds, %d moves; want every partition taken in one round", rounds, len(moves))
			}
			checkSpread(t, members, owner)
			// Most partitions go to the member that weighs them most (the weights decide, not
			// the order of partitions or members): a balanced random choice would give that
			// member to 1/N of them.
			first := 0
			for p, o := range owner {
				best := members[0]
				for _, m := range members {
					if partitionScore(p, m) > partitionScore(p, best) {
						best = m
					}
				}
				if o == best {
					first++
				}
			}
			if tc.k >= 1000 && float64(first) < 0.6*float64(tc.k) {
				t.Fatalf("%d of %d partitions went to the member weighing them most, want most", first, tc.k)
			}
		})
	}
}

// D3: a member joining a fleet at its shares receives its share, handed over by the others,
// and nothing else moves: at most ⌈K/(N+1)⌉ moves, all to the new member.
func TestD3JoinMovesOnlyTheNewShare(t *testing.T) {
	for _, tc := range []struct{ k, n, m int }{{1024, 3, 8}, {10000, 9, 100}, {10, 3, 1}, {3, 5, 2}} {
		t.Run(fmt.Sprintf("K%d_N%d_M%d", tc.k, tc.n, tc.m), func(t *testing.T) {
			members := memberNames(tc.n)
			owner := make([]string, tc.k)
			settle(t, members, owner, tc.m)
			members = append(members, "joiner")
			rounds, moves := settle(t, members, owner, tc.m)
			checkSpread(t, members, owner)
			share := (tc.k + tc.n) / (tc.n + 1) // ⌈K/(N+1)⌉
			if len(moves) > share {
				t.Fatalf("a join moved %d partitions, want at most %d", len(moves), share)
			}
			for _, mv := range moves {
				if mv.To != "joiner" {
					t.Fatalf("a join moved partition %d from %s to %s, not to the new member", mv.Partition, mv.From, mv.To)
				}
			}
			// D4: the handovers come in rounds of at most M per donor.
			if want := (len(moves) + tc.m*tc.n - 1) / (tc.m * tc.n); len(moves) > 0 && rounds < want {
				t.Fatalf("%d moves in %d rounds with %d donors of M = %d", len(moves), rounds, tc.n, tc.m)
			}
		})
	}
}

// D3: a member leaving frees its partitions (its leases expire or are released); only those
// move, to the members under their new share.
func TestD3LeaveMovesOnlyTheLeaversPartitions(t *testing.T) {
	for _, tc := range []struct{ k, n int }{{1024, 4}, {10, 4}, {7, 4}, {5, 5}, {10000, 10}} {
		t.Run(fmt.Sprintf("K%d_N%d", tc.k, tc.n), func(t *testing.T) {
			members := memberNames(tc.n)
			owner := make([]string, tc.k)
			settle(t, members, owner, 0)
			leaver := members[1]
			var freed []int
			for p, o := range owner {
				if o == leaver {
					owner[p] = ""
					freed = append(freed, p)
				}
			}
			members = slices.Delete(members, 1, 2)
			_, moves := settle(t, members, owner, 0)
			checkSpread(t, members, owner)
			if len(moves) != len(freed) {
				t.Fatalf("a leave moved %d partitions, want the leaver's %d", len(moves), len(freed))
			}
			for _, mv := range moves {
				if mv.From != "" {
					t.Fatalf("a leave moved partition %d from %s, a member that stayed", mv.Partition, mv.From)
				}
			}
		})
	}
}

// D2: a partition held by an instance that is not a member (its member record expired while
// its lease still runs) is neither taken nor counted until its lease frees it.
func TestD2NonMemberOwnerLeftAlone(t *testing.T) {
	owner := []string{"gone", "", "a", ""}
	moves := planPartitions([]string{"a", "b"}, owner, 0)
	for _, mv := range moves {
		if mv.Partition == 0 {
			t.Fatalf("planned %+v on a partition a live lease holds", mv)
		}
	}
	if len(moves) != 2 {
		t.Fatalf("moves = %v, want the two free partitions taken", moves)
	}
}

// D1–D4 at random: any fleet, after any sequence of joins and leaves, settles with counts
// differing by at most one, and each change moves no more than it must.
func TestDRandomJoinsAndLeaves(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for run := range 200 {
		k := 1 + rng.IntN(300)
		m := rng.IntN(5)
		members := memberNames(1 + rng.IntN(6))
		owner := make([]string, k)
		settle(t, members, owner, m)
		next := len(members)
		for range 6 {
			if len(members) > 1 && rng.IntN(2) == 0 {
				i := rng.IntN(len(members))
				for p, o := range owner {
					if o == members[i] {
						owner[p] = ""
					}
				}
				members = slices.Delete(members, i, i+1)
				_, moves := settle(t, members, owner, m)
				for _, mv := range moves {
					if mv.From != "" {
						t.Fatalf("run %d: a leave moved partition %d from %s", run, mv.Partition, mv.From)
					}
				}
			} else {
				members = append(members, fmt.Sprintf("node-%d", next))
				next++
				_, moves := settle(t, members, owner, m)
				if share := (k + len(members) - 1) / len(members); len(moves) > share {
					t.Fatalf("run %d: a join moved %d partitions, want at most %d", run, len(moves), share)
				}
			}
			checkSpread(t, members, owner)
		}
	}
}
