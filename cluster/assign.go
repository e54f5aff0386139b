package cluster

import (
	"cmp"
	"encoding/binary"
	"hash/fnv"
	"slices"
)

// The assignment of K partitions to the live members of a partitioned election (D1–D4 in
// docs/design.md). It is a pure function of a view (the members, and each partition's owner
// or none) so that every instance, given the same view, computes the same moves and acts only
// on its own: it takes the free partitions planned for it and hands over the ones planned away
// from it. The leases decide who owns what; the plan only says what each instance asks for,
// so a stale or differing view costs a lost race or a late move, never two owners.

// partitionMove is one change of owner: a free partition taken (From is ""), or one handed
// over from its owner to another member.
type partitionMove struct {
	Partition int
	From, To  string
}

// partitionScore is member's rendezvous weight for partition p (D2): each partition prefers
// the member with the highest weight, so a member's arrival or departure changes the
// preference of only the partitions it wins or held.
func partitionScore(p int, member string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(member))
	var b [9]byte
	binary.BigEndian.PutUint64(b[1:], uint64(p))
	h.Write(b[:])
	// FNV alone mixes the last bytes poorly: a finalizer spreads nearby partitions apart.
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// partitionShares returns each member's share of k partitions (D1): ⌊k/n⌋ or ⌈k/n⌉, so that
// shares differ by at most one and add up to k. The larger shares go to the members that own
// the most now (ties by ID), so that a fleet at its shares moves nothing, and a member leaving
// never makes another one over its share.
func partitionShares(k int, members []string, owned map[string]int) map[string]int {
	shares := make(map[string]int, len(members))
	n := len(members)
	if n == 0 {
		return shares
	}
	order := slices.Clone(members)
	slices.SortFunc(order, func(a, b string) int {
		if c := cmp.Compare(owned[b], owned[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	for i, m := range order {
		shares[m] = k / n
		if i < k%n {
			shares[m]++
		}
	}
	return shares
}

// planPartitions returns the moves that bring the view to the members' shares (D2–D4).
// owner[p] is partition p's owner, "" when it is free (released, expired or never taken); a
// partition owned by an instance that is not a member is left alone until its lease frees it.
// Free partitions go to the members under their share, each to the one that weighs it most;
// then members over their share hand over their excess to the members still under, each
// donor at most maxHandovers (D4; no limit when it is 0 or less), the partitions their
// receivers weigh most first.
func planPartitions(members []string, owner []string, maxHandovers int) []partitionMove {
	isMember := make(map[string]bool, len(members))
	for _, m := range members {
		isMember[m] = true
	}
	owned := make(map[string]int, len(members))
	var free []int
	for p, o := range owner {
		switch {
		case o == "":
			free = append(free, p)
		case isMember[o]:
			owned[o]++
		}
	}
	shares := partitionShares(len(owner), members, owned)
	deficit := make(map[string]int, len(members))
	for _, m := range members {
		if d := shares[m] - owned[m]; d > 0 {
			deficit[m] = d
		}
	}

	type pair struct {
		p     int
		to    string
		score uint64
	}
	// byScore orders candidate pairs, the heaviest first; partition and member break ties so
	// that every instance plans the same.
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

	// D2: free partitions to the members under their share.
	var pairs []pair
	for _, p := range free {
		for m := range deficit {
			pairs = append(pairs, pair{p, m, partitionScore(p, m)})
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

	// D3, D4: the excess of members over their share, to the members still under it.
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
				pairs = append(pairs, pair{p, m, partitionScore(p, m)})
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
