package cluster

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/store/memory"
)

// advertising sets the value n publishes, before it starts (V1).
func (n *node) advertising(v string) *node {
	n.e.value = v
	return n
}

// leaderNow reads the world's lease as a client would (V3).
func (w *world) leaderNow() LeaderInfo {
	w.T.Helper()
	info, err := Leader(context.Background(), NewStoreLock(w.Mem), "leader")
	if err != nil {
		w.T.Fatalf("Leader: %v", err)
	}
	return info
}

// V1, V2, V3: the value is written with the acquisition, carried by every renewal, cleared by
// the release; the next holder's takeover writes its own value, and a holder that publishes
// nothing leaves none of its predecessor's.
func TestV1ValueCarriedAndCleared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		if info := w.leaderNow(); info.Held() || info.ID != "" || info.Value != "" {
			t.Fatalf("Leader before any record = %+v, held %v; want nobody", info, info.Held())
		}
		a := w.node("a", 0, 0).advertising("http://10.0.0.1:8080").start() // 0, 5, 10, ...
		w.At(sec(1))
		b := w.node("b", 0, 0).advertising("http://10.0.0.2:8080").start() // 1, 6, 11, ...
		w.At(sec(2))
		c := w.node("c", 0, 0).start() // 2, 7, 12, ...
		w.At(sec(3))
		want := LeaderInfo{ID: "a", Term: 1, Value: "http://10.0.0.1:8080"}
		if info := w.leaderNow(); info != want || !info.Held() {
			t.Fatalf("Leader = %+v, held %v; want %+v, held", info, info.Held(), want)
		}
		if doc := w.record(); doc["value"] != "http://10.0.0.1:8080" || doc["valueTerm"] != 1.0 {
			t.Fatalf("stored record %v; want value and valueTerm 1", doc)
		}
		w.At(sec(13)) // renewals at 5 and 10
		if info := w.leaderNow(); info != want {
			t.Fatalf("Leader after two renewals = %+v; want %+v", info, want)
		}
		if err := a.e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if doc := w.record(); doc["holder"] != "" || doc["value"] != "" || doc["valueTerm"] != 0.0 {
			t.Fatalf("record after the release %v; want no holder and no value", doc)
		}
		if info := w.leaderNow(); info.Held() || info.Value != "" {
			t.Fatalf("Leader after the release = %+v, held %v; want nobody, no value", info, info.Held())
		}
		w.At(sec(17)) // b's attempt at 16 takes the released record
		want = LeaderInfo{ID: "b", Term: 2, Value: "http://10.0.0.2:8080"}
		if info := w.leaderNow(); info != want || !info.Held() {
			t.Fatalf("Leader after b's takeover = %+v; want %+v", info, want)
		}
		b.crash()
		w.At(sec(60)) // c takes the record over once it has expired on its clock (E6)
		if !c.e.IsLeader() {
			t.Fatal("c does not lead once b's record has expired")
		}
		info := w.leaderNow()
		if info.ID != "c" || info.Term != 3 || info.Value != "" || !info.Held() {
			t.Fatalf("Leader after c's takeover = %+v; want c, term 3, no value", info)
		}
		if doc := w.record(); doc["value"] != "" || doc["valueTerm"] != 0.0 {
			t.Fatalf("record after c's takeover %v; want no value: b's must not stay", doc)
		}
	})
}

// V2: a value written for another term than the record's reads as absent: a writer that knows
// nothing of the field took the record over and kept it.
func TestV2StaleValueReadsAbsent(t *testing.T) {
	ctx := context.Background()
	lock := NewStoreLock(memory.New())
	at := time.Now()
	rec, err := lock.Create(ctx, "api", Record{Holder: "other", Term: 2, AcquiredAt: at, RenewedAt: at, Duration: time.Minute, Value: "http://old:80", ValueTerm: 1})
	if err != nil {
		t.Fatal(err)
	}
	if v := rec.CurrentValue(); v != "" {
		t.Fatalf("CurrentValue of a term-2 record with a term-1 value = %q; want none", v)
	}
	info, err := Leader(ctx, lock, "api")
	if err != nil || info.ID != "other" || info.Value != "" || !info.Held() {
		t.Fatalf("Leader = %+v, %v; want other, held, no value", info, err)
	}
	rec.ValueTerm = 2
	if _, err := lock.Update(ctx, "api", rec); err != nil {
		t.Fatal(err)
	}
	if info, err := Leader(ctx, lock, "api"); err != nil || info.Value != "http://old:80" {
		t.Fatalf("Leader with the value of the current term = %+v, %v; want it", info, err)
	}
}

// V4: a record whose holder stopped renewing reads as not held once its last renewal is older
// than its declared duration, by the reader's clock (as status judges it); its holder and term
// stay readable.
func TestV4LeaderExpiredIsNotHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		a := w.node("a", 0, 0).advertising("a:1").start()
		w.At(sec(11)) // last renewal at 10
		a.crash()
		w.At(sec(25))
		if info := w.leaderNow(); !info.Held() || info.ID != "a" {
			t.Fatalf("Leader 15s after the last renewal = %+v, held %v; want a, held", info, info.Held())
		}
		w.At(sec(25) + time.Millisecond)
		info := w.leaderNow()
		if info.Held() || info.ID != "a" || info.Term != 1 {
			t.Fatalf("Leader 15.001s after the last renewal = %+v, held %v; want a, term 1, not held", info, info.Held())
		}
	})
}

// V1: a value longer than MaxValueBytes, or of more than one line, is refused by NewElector
// with an error naming the field; MaxValueBytes itself is accepted.
func TestV1ValueValidation(t *testing.T) {
	for _, tc := range []struct {
		value string
		bad   string
	}{
		{strings.Repeat("x", MaxValueBytes), ""},
		{strings.Repeat("x", MaxValueBytes+1), "1025 bytes, at most 1024"},
		{"http://a:80\nhttp://b:80", "one line"},
		{"http://a:80\r", "one line"},
	} {
		_, err := NewElector(ElectorConfig{Lock: NewStoreLock(memory.New()), Advertise: tc.value})
		if tc.bad == "" {
			if err != nil {
				t.Errorf("NewElector with a value of %d bytes: %v", len(tc.value), err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "ElectorConfig.Advertise") || !strings.Contains(err.Error(), tc.bad) {
			t.Errorf("NewElector with Advertise %.20q: %v; want an error naming ElectorConfig.Advertise and %q", tc.value, err, tc.bad)
		}
	}
	if _, err := Leader(context.Background(), nil, "x"); err == nil {
		t.Error("Leader with a nil Lock: no error")
	}
}

// V5: FollowLeader delivers the leader as first read, then each new holder with its value.
func TestV5FollowLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		infos, err := FollowLeader(ctx, ObserveConfig{Lock: NewStoreLock(w.Mem), LeaseName: "leader", Interval: sec(1)})
		if err != nil {
			t.Fatal(err)
		}
		if first := <-infos; first.Held() || first.Term != 0 {
			t.Fatalf("first delivery %+v; want nobody", first)
		}
		a := w.node("a", 0, 0).advertising("http://a:80").start()
		if got := <-infos; got != (LeaderInfo{ID: "a", Term: 1, Value: "http://a:80"}) {
			t.Fatalf("delivery after a's acquisition %+v", got)
		}
		if err := a.e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := <-infos; got.Held() || got.Value != "" || got.Term != 1 {
			t.Fatalf("delivery after a's release %+v; want nobody, term 1, no value", got)
		}
		w.node("b", 0, 0).advertising("http://b:80").start()
		if got := <-infos; got != (LeaderInfo{ID: "b", Term: 2, Value: "http://b:80"}) {
			t.Fatalf("delivery after b's takeover %+v", got)
		}
		cancel()
		for range infos {
		}
	})
}
