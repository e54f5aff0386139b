package storetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/store"
)

// roster checks the roster of a partitioned election as the store Lock keeps it (D5): members
// beating their own entries of one document, without a condition, read back together; one
// that leaves is gone. IDs of any characters become field names the store keeps as they are.
func (s *suite) roster(t *testing.T) {
	s.run(func(t *testing.T, st store.Store, key string) {
		ctx := t.Context()
		r, ok := cluster.NewStoreLock(st).(cluster.Roster)
		if !ok {
			t.Fatal("the store Lock is not a Roster")
		}
		name := strings.TrimPrefix(key, docs.Key("")) + ".members"
		want := []cluster.Member{
			{ID: "web-1", Session: "4f1c9a0b7e2d3c58", Beat: 3, Duration: 15 * time.Second},
			{ID: "Ünïcode / 2", Session: "0123456789abcdef", Beat: 1, Duration: 2 * time.Second},
			{ID: "web-3", Session: "fedcba9876543210", Beat: 9, Duration: 15 * time.Second},
		}
		for _, m := range want {
			if err := r.Beat(ctx, name, m); err != nil {
				t.Fatalf("Beat(%+v): %v", m, err)
			}
		}
		want[0].Beat = 4
		if err := r.Beat(ctx, name, want[0]); err != nil {
			t.Fatal(err)
		}
		if err := r.Leave(ctx, name, want[2].ID); err != nil {
			t.Fatal(err)
		}
		got, err := r.Members(ctx, name)
		byID := func(a, b cluster.Member) int { return strings.Compare(a.ID, b.ID) }
		slices.SortFunc(got, byID)
		want = want[:2]
		slices.SortFunc(want, byID)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("Members = %+v, %v; want %+v", got, err, want)
		}
	})(t)
}
