package partition

import (
	"cmp"
	"encoding/binary"
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
// preference of only the partitions it wins or held. FNV-1a over the member's ID and the
// partition's number, computed in place: a plan at K = 10,000 over 10 members weighs 100,000
// pairs.
func partitionScore(p int, member string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	x := uint64(offset)
	for i := 0; i < len(member); i++ {
		x = (x ^ uint64(member[i])) * prime
	}
	var b [9]byte
	binary.BigEndian.PutUint64(b[1:], uint64(p))
	for _, c := range b {
		x = (x ^ uint64(c)) * prime
	}
	// FNV alone mixes the last bytes poorly: a finalizer spreads nearby partitions apart.
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
//
// Both steps take the (partition, member) pairs heaviest first, and a pair is taken while
// both sides have room: the result is the one stable assignment of those weights. It is
// computed without sorting every pair (K·N of them): free partitions propose to members in
// their order of weight, and a full member keeps the heaviest (deferred acceptance, which
// reaches that same assignment); a donor's pairs with a receiver beyond their maxHandovers
// heaviest are never taken (each pair before them was taken, or its partition went to
// another receiver: each a handover of that donor's, which makes maxHandovers at most), so
// only those are sorted.
func planPartitions(members []string, owner []string, maxHandovers int) []partitionMove {
	owned, free, shares, deficit := planStart(members, owner)
	var moves []partitionMove
	for _, c := range assignFree(free, deficit) {
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
	var receivers []string
	for _, m := range members {
		if deficit[m] > 0 {
			receivers = append(receivers, m)
		}
	}
	if len(excess) == 0 || len(receivers) == 0 {
		return moves
	}
	var pairs []scoredPair
	if maxHandovers > 0 {
		// The maxHandovers heaviest pairs of each donor with each receiver.
		keep := maxHandovers
		top := make(map[[2]string]*pairHeap)
		for p, o := range owner {
			if excess[o] == 0 {
				continue
			}
			for _, m := range receivers {
				k := [2]string{o, m}
				h := top[k]
				if h == nil {
					h = &pairHeap{}
					top[k] = h
				}
				h.pushBounded(scoredPair{p, m, partitionScore(p, m)}, keep)
			}
		}
		for _, h := range top {
			pairs = append(pairs, *h...)
		}
	} else {
		for p, o := range owner {
			if excess[o] == 0 {
				continue
			}
			for _, m := range receivers {
				pairs = append(pairs, scoredPair{p, m, partitionScore(p, m)})
			}
		}
	}
	slices.SortFunc(pairs, heavierFirst)
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

// planStart returns what a plan starts from: the partitions each member owns, the free ones,
// each member's share (D1) and how far under it each member is.
func planStart(members []string, owner []string) (owned map[string]int, free []int, shares, deficit map[string]int) {
	isMember := make(map[string]bool, len(members))
	for _, m := range members {
		isMember[m] = true
	}
	owned = make(map[string]int, len(members))
	for p, o := range owner {
		switch {
		case o == "":
			free = append(free, p)
		case isMember[o]:
			owned[o]++
		}
	}
	shares = partitionShares(len(owner), members, owned)
	deficit = make(map[string]int, len(members))
	for _, m := range members {
		if d := shares[m] - owned[m]; d > 0 {
			deficit[m] = d
		}
	}
	return owned, free, shares, deficit
}

// scoredPair is partition p given to member to, of weight score.
type scoredPair struct {
	p     int
	to    string
	score uint64
}

// heavierFirst orders pairs the heaviest first; partition and member break ties so that every
// instance plans the same.
func heavierFirst(a, b scoredPair) int {
	if c := cmp.Compare(b.score, a.score); c != 0 {
		return c
	}
	if c := cmp.Compare(a.p, b.p); c != 0 {
		return c
	}
	return cmp.Compare(a.to, b.to)
}

// assignFree gives the free partitions to the members with room (deficit), as taking every
// pair heaviest first while both sides have room would (D2), and returns the pairs taken in
// that order. Each partition proposes to the members in its order of weight; a member keeps
// the heaviest of its proposals up to its room and turns the lightest away, whose partition
// proposes to its next member. With every preference drawn from one weight per pair, the
// assignment this reaches is the only stable one, which the heaviest-first order also builds.
func assignFree(free []int, deficit map[string]int) []scoredPair {
	var members []string
	for m, d := range deficit {
		if d > 0 {
			members = append(members, m)
		}
	}
	if len(members) == 0 || len(free) == 0 {
		return nil
	}
	slices.Sort(members)
	n := len(members)
	// prefs[i*n:(i+1)*n] are free[i]'s pairs, heaviest first.
	prefs := make([]scoredPair, len(free)*n)
	for i, p := range free {
		row := prefs[i*n : (i+1)*n]
		for j, m := range members {
			row[j] = scoredPair{p, m, partitionScore(p, m)}
		}
		slices.SortFunc(row, heavierFirst)
	}
	held := make(map[string]*pairHeap, n)
	for _, m := range members {
		held[m] = &pairHeap{}
	}
	next := make([]int, len(free)) // the index in its row of each partition's next proposal
	queue := make([]int, len(free))
	for i := range queue {
		queue[i] = i
	}
	index := make(map[int]int, len(free)) // partition → its index in free
	for i, p := range free {
		index[p] = i
	}
	for len(queue) > 0 {
		i := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if next[i] == n {
			continue // turned away by every member with room: left free
		}
		c := prefs[i*n+next[i]]
		next[i]++
		h := held[c.to]
		if h.Len() < deficit[c.to] {
			h.push(c)
			continue
		}
		if lightest := (*h)[0]; heavierFirst(c, lightest) < 0 {
			h.popLightest()
			h.push(c)
			queue = append(queue, index[lightest.p])
		} else {
			queue = append(queue, i)
		}
	}
	var out []scoredPair
	for _, h := range held {
		out = append(out, *h...)
	}
	slices.SortFunc(out, heavierFirst)
	return out
}

// pairHeap is a min-heap of pairs by heavierFirst: the lightest on top.
type pairHeap []scoredPair

func (h pairHeap) Len() int { return len(h) }

func (h *pairHeap) push(c scoredPair) {
	*h = append(*h, c)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if heavierFirst(s[i], s[parent]) <= 0 { // not lighter than its parent
			break
		}
		s[i], s[parent] = s[parent], s[i]
		i = parent
	}
}

func (h *pairHeap) popLightest() {
	s := *h
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, r, lightest := 2*i+1, 2*i+2, i
		if l < len(s) && heavierFirst(s[l], s[lightest]) > 0 {
			lightest = l
		}
		if r < len(s) && heavierFirst(s[r], s[lightest]) > 0 {
			lightest = r
		}
		if lightest == i {
			break
		}
		s[i], s[lightest] = s[lightest], s[i]
		i = lightest
	}
	*h = s
}

// pushBounded keeps the keep heaviest pairs pushed.
func (h *pairHeap) pushBounded(c scoredPair, keep int) {
	if h.Len() < keep {
		h.push(c)
		return
	}
	if heavierFirst(c, (*h)[0]) < 0 {
		h.popLightest()
		h.push(c)
	}
}
