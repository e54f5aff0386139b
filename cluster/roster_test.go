package cluster

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
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
	if err := mem.Patch(ctx, StoreKeyPrefix+"work.members", map[string]any{rosterField("bad"): "x:y"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Members(ctx, "work.members"); err == nil || !strings.Contains(err.Error(), `"work.members"`) || !strings.Contains(err.Error(), `"bad"`) {
		t.Fatalf("Members with a malformed entry: %v; want an error naming the roster and the member", err)
	}
	if err := r.Beat(ctx, "work.members", Member{ID: "x", Session: "a:b", Beat: 1, Duration: time.Second}); err == nil {
		t.Fatal("Beat with a session holding ':' succeeded")
	}
}

// D5: a member is live while its entry changes within D on the observer's clock: a new beat
// seen at 10s keeps it until 25s (L = 15s); a member that declares 30s is kept 30s; an entry
// gone is forgotten at once; a restarted process (another session, same beat) counts as a
// change.
func TestD5RosterViewJudgesOnItsOwnClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		at := func(d time.Duration) time.Time { return start.Add(d) }
		v := newRosterView(15 * time.Second)
		a := Member{ID: "a", Session: "s1", Beat: 1, Duration: 15 * time.Second}
		long := Member{ID: "long", Session: "s2", Beat: 1, Duration: 30 * time.Second}
		v.update([]Member{a, long}, at(0))
		a.Beat = 2
		v.update([]Member{a, long}, at(10*time.Second))
		live := func(d time.Duration) []string {
			ids := v.live(at(d))
			slices.Sort(ids)
			return ids
		}
		if got := live(25*time.Second - time.Nanosecond); !slices.Equal(got, []string{"a", "long"}) {
			t.Fatalf("live just before 25s: %v", got)
		}
		if got := live(25 * time.Second); !slices.Equal(got, []string{"long"}) {
			t.Fatalf("live at 25s: %v; want long alone (a's beat seen at 10s, L 15s)", got)
		}
		if got := live(30 * time.Second); len(got) != 0 {
			t.Fatalf("live at 30s: %v; want none (long declared 30s, seen at 0s)", got)
		}
		a.Session = "s3" // another process under a's ID, its counter back at 2
		v.update([]Member{a}, at(31*time.Second))
		if got := live(45 * time.Second); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("live at 45s: %v; want a, seen anew at 31s", got)
		}
		if _, ok := v.seen["long"]; ok {
			t.Fatal("an entry gone from the roster is still in the view")
		}
	})
}
