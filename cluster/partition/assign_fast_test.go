package partition

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"testing"
)

// The plan's weights and its assignment are computed without sorting every (partition,
// member) pair; they must be exactly those of the plain definition: FNV-1a through hash/fnv,
// and every pair taken heaviest first while both sides have room. Every instance must plan the
// same from the same view, whichever version of leasehold it runs.
func TestPlanSameAsHeaviestPairsFirst(t *testing.T) {
	for p := range 2000 {
		for _, m := range []string{"", "a", "web-1", "m9", "0123456789abcdef0123456789abcdef"} {
			if got, want := partitionScore(p, m), scoreByDefinition(p, m); got != want {
				t.Fatalf("partitionScore(%d, %q) = %x; want %x", p, m, got, want)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 3000 {
		k := 1 + rng.IntN(60)
		n := 1 + rng.IntN(6)
		var members []string
		for i := range n {
			members = append(members, fmt.Sprintf("m%d", i))
		}
		others := []string{"gone", unknownOwner}
		owner := make([]string, k)
		for p := range owner {
			switch r := rng.IntN(10); {
			case r < 3:
				owner[p] = "" // free
			case r < 4:
				owner[p] = others[rng.IntN(len(others))]
			default:
				// Skewed, so that some members are far over their share.
				owner[p] = members[min(rng.IntN(n), rng.IntN(n))]
			}
		}
		maxHandovers := rng.IntN(4) // 0: no limit
		got := planPartitions(members, owner, maxHandovers)
		want := planByDefinition(members, owner, maxHandovers)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: members %v, owners %q, max %d:\nplan %v\nwant %v", trial, members, owner, maxHandovers, got, want)
		}
	}
}

// BenchmarkPlanPartitions is a plan at 10,000 partitions over 10 members: from nothing owned,
// half owned, and one member owning all but ten.
func BenchmarkPlanPartitions(b *testing.B) {
	const k, n = 10000, 10
	members := make([]string, n)
	for i := range members {
		members[i] = fmt.Sprintf("m%d", i)
	}
	for _, c := range []struct {
		name string
		own  func(p int) string
	}{
		{"free", func(int) string { return "" }},
		{"half", func(p int) string {
			if p%2 == 0 {
				return members[p%n]
			}
			return ""
		}},
		{"piled", func(p int) string {
			if p < k-10 {
				return members[0]
			}
			return members[p%n]
		}},
	} {
		owner := make([]string, k)
		for p := range owner {
			owner[p] = c.own(p)
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				planPartitions(members, owner, 10)
			}
		})
	}
}

func scoreByDefinition(p int, member string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(member))
	var b [9]byte
	binary.BigEndian.PutUint64(b[1:], uint64(p))
	h.Write(b[:])
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// planByDefinition is planPartitions as D2–D4 state it, from the same start (planStart):
// every pair sorted, heaviest first.
func planByDefinition(members []string, owner []string, maxHandovers int) []partitionMove {
	owned, free, shares, deficit := planStart(members, owner)
	type pair struct {
		p     int
		to    string
		score uint64
	}
	byScore := func(a, b pair) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if c := cmp.Compare(a.p, b.p); c != 0 {
			return c
		}
		return cmp.Compare(a.to, b.to)
	}
	var moves []partitionMove
	var pairs []pair
	for _, p := range free {
		for m := range deficit {
			pairs = append(pairs, pair{p, m, scoreByDefinition(p, m)})
		}
	}
	slices.SortFunc(pairs, byScore)
	taken := make(map[int]bool)
	for _, c := range pairs {
		if taken[c.p] || deficit[c.to] == 0 {
			continue
		}
		taken[c.p] = true
		deficit[c.to]--
		moves = append(moves, partitionMove{Partition: c.p, To: c.to})
	}
	excess := make(map[string]int)
	for _, m := range members {
		if x := owned[m] - shares[m]; x > 0 {
			excess[m] = x
			if maxHandovers > 0 {
				excess[m] = min(x, maxHandovers)
			}
		}
	}
	pairs = pairs[:0]
	for p, o := range owner {
		if excess[o] == 0 {
			continue
		}
		for m, d := range deficit {
			if d > 0 {
				pairs = append(pairs, pair{p, m, scoreByDefinition(p, m)})
			}
		}
	}
	slices.SortFunc(pairs, byScore)
	moved := make(map[int]bool)
	for _, c := range pairs {
		from := owner[c.p]
		if moved[c.p] || excess[from] == 0 || deficit[c.to] == 0 {
			continue
		}
		moved[c.p] = true
		excess[from]--
		deficit[c.to]--
		moves = append(moves, partitionMove{Partition: c.p, From: from, To: c.to})
	}
	return moves
}
