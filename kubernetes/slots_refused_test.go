package kubernetes

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/cluster/holders"
)

// gatedLock is a Lease lock whose Gets of the Leases in failGet fail while the test says so,
// and which records the updates sent on a revision the API server never wrote (one holding a
// NUL, which it refuses as an invalid resourceVersion, not as a conflict).
type gatedLock struct {
	*leaseLock

	mu      sync.Mutex
	failGet map[string]bool
	madeUp  []string
}

func (l *gatedLock) Get(ctx context.Context, name string) (cluster.Record, error) {
	l.mu.Lock()
	fail := l.failGet[name]
	l.mu.Unlock()
	if fail {
		return cluster.Record{}, fmt.Errorf("test: get Lease %s refused", name)
	}
	return l.leaseLock.Get(ctx, name)
}

func (l *gatedLock) Update(ctx context.Context, name string, r cluster.Record) (cluster.Record, error) {
	rec, err := l.leaseLock.Update(ctx, name, r)
	if strings.Contains(r.Revision, "\x00") {
		l.mu.Lock()
		l.madeUp = append(l.madeUp, fmt.Sprintf("%q: %v", r.Revision, err))
		l.mu.Unlock()
	}
	return rec, err
}

func (l *gatedLock) gate(name string, fail bool) {
	l.mu.Lock()
	l.failGet[name] = fail
	l.mu.Unlock()
}

// TestHoldersRefusedSlotOnKubernetes: N holders over the Lease lock never wedge after a resign
// (H2, E10). a and b hold the two slots of batch, p and q; x, one holder of the Lease batch-p,
// waits for p. b stops and releases q, which a, holding p, is refused: it follows q under a
// revision of its own, which no API server wrote. a's reads of batch-q then fail, p is
// resigned to x, x takes it, and a holds nothing while q is free; its reads fail until what it
// follows on q has expired (D = 2 s) and R more, then succeed. a takes q within R. Before, a
// sent its takeover with the made-up revision as the Lease's resourceVersion, the API server
// refused it as invalid (not 409), and a repeated that update every R, holding no slot for good.
func TestHoldersRefusedSlotOnKubernetes(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "create", "update", "watch")
	ev := newEvents()
	var logs syncBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", logs.String())
		}
	})
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	stopAll := func(name string, stop func(context.Context) error) {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := stop(ctx); err != nil {
				t.Errorf("Stop %s: %v", name, err)
			}
		})
	}
	startHolders := func(id string, lock cluster.Lock) *holders.Holders {
		h, err := holders.New(cluster.ElectorConfig{
			Lock: lock, LeaseName: "batch", LeaseDuration: testL, RenewInterval: testR, InstanceID: id,
			Observer: ev.observe, Logger: logger.With("instance", id),
		}, 2)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return h
	}

	lockA, _ := newLock(t, ns)
	gated := &gatedLock{leaseLock: lockA.(*leaseLock), failGet: map[string]bool{}}
	a := startHolders("pod-a", gated)
	stopAll("pod-a", a.Stop)
	from := 0
	ev.wait(t, &from, 10*time.Second, "pod-a leading", kindOf(cluster.BecameLeader, "pod-a"))
	lockB, _ := newLock(t, ns)
	b := startHolders("pod-b", lockB)
	stopped := false
	stopAll("pod-b", func(ctx context.Context) error {
		if stopped {
			return nil
		}
		return b.Stop(ctx)
	})
	ev.wait(t, &from, 10*time.Second, "pod-b leading", kindOf(cluster.BecameLeader, "pod-b"))
	p, _, okA := a.Slot()
	q, _, okB := b.Slot()
	if !okA || !okB || p == q {
		t.Fatalf("slots: pod-a %d (%v), pod-b %d (%v); want one each", p, okA, q, okB)
	}
	pName, qName := fmt.Sprintf("batch-%d", p), fmt.Sprintf("batch-%d", q)

	lockX, _ := newLock(t, ns)
	x, err := cluster.NewElector(cluster.ElectorConfig{
		Lock: lockX, LeaseName: pName, LeaseDuration: testL, RenewInterval: testR, InstanceID: "x",
		Observer: ev.observe, Logger: logger.With("instance", "x"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	stopAll("x", x.Stop)

	// b releases q; a, holding p, follows the released Lease without taking it.
	mark := ev.mark()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	stopped = true
	from = mark
	ev.wait(t, &from, testR+slack, "pod-a following the released "+qName, func(e cluster.Event) bool {
		return e.Instance == "pod-a" && e.Lease == qName && e.Kind == cluster.AttemptSucceeded && e.Holder == ""
	})
	ev.wait(t, &from, testR+slack, "pod-a following the released "+qName+" again", func(e cluster.Event) bool {
		return e.Instance == "pod-a" && e.Lease == qName && e.Kind == cluster.AttemptSucceeded && e.Holder == ""
	})

	gated.gate(qName, true)
	if _, err := cluster.Resign(ctx, lockX, pName, "x"); err != nil {
		t.Fatal(err)
	}
	e := ev.wait(t, &from, 2*testR+slack, "x taking "+pName, kindOf(cluster.BecameLeader, "x"))
	free := e.Time
	if _, _, ok := a.Slot(); ok {
		t.Fatal("pod-a holds a slot after resigning p, while its reads of q fail")
	}
	// a attempts q every R, and fails, until what it follows on q has expired (D after it
	// first saw it, before free) and R more.
	d := testL
	ev.wait(t, &from, d+2*testR+slack, "pod-a's attempts on "+qName+" failing", func(e cluster.Event) bool {
		return e.Instance == "pod-a" && e.Lease == qName && e.Kind == cluster.AttemptFailed && e.Time.After(free.Add(d+testR))
	})
	if _, _, ok := a.Slot(); ok {
		t.Fatal("pod-a holds a slot while its reads of q fail")
	}
	gated.gate(qName, false)
	healed := time.Now()
	e = ev.wait(t, &from, testR+slack, "pod-a taking the free "+qName, func(e cluster.Event) bool {
		return e.Kind == cluster.BecameLeader
	})
	if e.Instance != "pod-a" || e.Lease != qName {
		t.Fatalf("%s became the leader of %s; want pod-a of %s", e.Instance, e.Lease, qName)
	}
	t.Logf("pod-a took %s %v after its reads succeeded again", qName, e.Time.Sub(healed))
	gated.mu.Lock()
	defer gated.mu.Unlock()
	if len(gated.madeUp) > 0 {
		t.Errorf("pod-a sent %d updates on a resourceVersion the API server never wrote, first %s", len(gated.madeUp), gated.madeUp[0])
	}
}
