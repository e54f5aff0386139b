package cluster

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store/memory"
)

// D5: each member beats its own entry, Members reads them all back, Leave removes one; a
// malformed entry is an error naming the roster and the member.
func TestD5RosterEntries(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	r := NewStoreLock(mem).(Roster)
	if ms, err := r.Members(ctx, "work.members"); err != nil || len(ms) != 0 {
		t.Fatalf("Members of a roster never written = %v, %v; want none", ms, err)
	}
	a := Member{ID: "web-1", Session: "4f1c9a0b7e2d3c58", Beat: 1, Duration: 15 * time.Second}
	b := Member{ID: "héllo world/2", Session: "0123456789abcdef", Beat: 7, Duration: 2 * time.Second}
	for _, m := range []Member{a, b, {ID: a.ID, Session: a.Session, Beat: 2, Duration: a.Duration}} {
		if err := r.Beat(ctx, "work.members", m); err != nil {
			t.Fatalf("Beat(%+v): %v", m, err)
		}
	}
	a.Beat = 2
	ms, err := r.Members(ctx, "work.members")
	slices.SortFunc(ms, func(x, y Member) int { return strings.Compare(x.ID, y.ID) })
	if err != nil || !slices.Equal(ms, []Member{b, a}) {
		t.Fatalf("Members = %+v, %v; want %+v", ms, err, []Member{b, a})
	}
	if err := r.Leave(ctx, "work.members", b.ID); err != nil {
		t.Fatal(err)
	}
	if ms, err := r.Members(ctx, "work.members"); err != nil || !slices.Equal(ms, []Member{a}) {
		t.Fatalf("Members after b left = %+v, %v; want a alone", ms, err)
	}
	if err := mem.Patch(ctx, storeKeyPrefix+"work.members", map[string]any{rosterField("bad"): "x:y"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Members(ctx, "work.members"); err == nil || !strings.Contains(err.Error(), `"work.members"`) || !strings.Contains(err.Error(), `"bad"`) {
		t.Fatalf("Members with a malformed entry: %v; want an error naming the roster and the member", err)
	}
	if err := r.Beat(ctx, "work.members", Member{ID: "x", Session: "a:b", Beat: 1, Duration: time.Second}); err == nil {
		t.Fatal("Beat with a session holding ':' succeeded")
	}
}
