package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/kubernetes/internal/kubetest"
)

// The settings under which leasehold and client-go's leaderelection can share one Lease.
//
// client-go judges expiry from the last time it saw the record change, plus the
// leaseDurationSeconds written in it. It compares the record as JSON with renewTime at whole
// seconds, so renewals within one wall-clock second look like none: it may date a leasehold
// leader's last renewal up to 1 s too early. A leasehold leader leads until (L + R)/2 after its
// last successful attempt began, so client-go's followers are safe when
// ceil(L) >= (L + R)/2 + 1 s: with L in whole seconds, L >= R + 2 s.
//
// A client-go leader whose renewals fail leads until RetryPeriod + RenewDeadline after its last
// successful one; with ReleaseOnCancel it then tries to release, for up to RenewDeadline more,
// before it cancels its leader's context. Every follower, client-go's or leasehold's, waits for
// the leaseDurationSeconds that leader wrote: its LeaseDuration truncated to whole seconds. So
// that must exceed RetryPeriod + RenewDeadline (+ RenewDeadline with ReleaseOnCancel), with
// room for the API server's latency.
const (
	mixedL = 3 * time.Second
	mixedR = 500 * time.Millisecond
)

// goTiming is a client-go elector's LeaseDuration, RenewDeadline and RetryPeriod.
type goTiming struct{ lease, renew, retry time.Duration }

var goT = goTiming{lease: 3 * time.Second, renew: time.Second, retry: 500 * time.Millisecond}

// TestMixedFleet runs client-go electors (tools/leaderelection with a LeaseLock) and leasehold
// instances on one Lease, with the settings above. In each case the leader, of one kind, stops
// or crashes while a follower of the other kind waits: at no moment do two instances lead, and
// the follower takes over. The takeover times are logged.
func TestMixedFleet(t *testing.T) {
	s := api(t)
	t.Run("client-go leader stops, releasing", func(t *testing.T) {
		t.Parallel()
		m := newMixed(t, s)
		cg := m.clientGo("cg", goT, true)
		m.waitLeader("cg", 10*time.Second)
		lh := m.leasehold("lh", mixedL, mixedR)
		m.steady(lh.wire)
		stop := time.Now()
		cg.stop()
		at := m.waitLeader("lh", goT.renew+mixedR+slack)
		m.finish()
		t.Logf("client-go leader stopped (ReleaseOnCancel): leasehold took over %v after the stop", at.Sub(stop))
	})
	t.Run("client-go leader crashes, not releasing", func(t *testing.T) {
		t.Parallel()
		m := newMixed(t, s)
		cg := m.clientGo("cg", goT, false)
		m.waitLeader("cg", 10*time.Second)
		lh := m.leasehold("lh", mixedL, mixedR)
		m.steady(lh.wire)
		crash := time.Now()
		cg.stop() // without ReleaseOnCancel: the Lease stays held, as after a kill
		at := m.waitLeader("lh", goT.lease.Truncate(time.Second)+mixedR+slack+time.Second)
		last := cg.wire.lastWrite()
		m.finish()
		m.takeoverWithin(at.Sub(last), goT.lease.Truncate(time.Second)+mixedR)
		t.Logf("client-go leader crashed (context cancelled, no release): leasehold took over %v after its last renewal, %v after the crash (bound leaseDurationSeconds + R = %v)",
			at.Sub(last), at.Sub(crash), goT.lease.Truncate(time.Second)+mixedR)
	})
	t.Run("client-go leader stops renewing", func(t *testing.T) {
		t.Parallel()
		m := newMixed(t, s)
		cg := m.clientGo("cg", goT, true)
		m.waitLeader("cg", 10*time.Second)
		lh := m.leasehold("lh", mixedL, mixedR)
		m.steady(lh.wire)
		cut := time.Now()
		cg.cut.cut.Store(true) // it still believes it leads, until RenewDeadline passes
		at := m.waitLeader("lh", goT.lease+mixedR+slack+time.Second)
		last := cg.wire.lastWrite()
		m.finish()
		ended := m.led.ended("cg")
		m.takeoverWithin(at.Sub(last), goT.lease.Truncate(time.Second)+mixedR)
		t.Logf("client-go leader cut off: it stopped leading %v after its last renewal (RetryPeriod + 2 RenewDeadline = %v, with ReleaseOnCancel); leasehold took over %v after that renewal, %v after the cut",
			ended.Sub(last), goT.retry+2*goT.renew, at.Sub(last), at.Sub(cut))
	})
	t.Run("leasehold leader stops, releasing", func(t *testing.T) {
		t.Parallel()
		m := newMixed(t, s)
		lh := m.leasehold("lh", mixedL, mixedR)
		m.waitLeader("lh", 10*time.Second)
		cg := m.clientGo("cg", goT, true)
		m.steady(cg.wire)
		stop := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := lh.in.app.Stop(ctx); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		at := m.waitLeader("cg", jittered(goT.retry)+slack)
		m.finish()
		t.Logf("leasehold leader stopped (released): client-go took over %v after the stop began", at.Sub(stop))
	})
	t.Run("leasehold leader crashes", func(t *testing.T) {
		t.Parallel()
		m := newMixed(t, s)
		lh := m.leasehold("lh", mixedL, mixedR)
		m.waitLeader("lh", 10*time.Second)
		cg := m.clientGo("cg", goT, true)
		m.steady(cg.wire)
		cut := time.Now()
		lh.in.cut.cut.Store(true) // it still leads, until (L + R)/2 after its last renewal began
		// client-go waits leaseDurationSeconds from when it saw the record change, which may
		// be up to 1 s before the last renewal, then tries every RetryPeriod, jittered.
		bound := mixedL + time.Second + jittered(goT.retry)
		at := m.waitLeader("cg", bound+slack)
		last := lh.wire.lastWrite()
		m.finish()
		ended := m.led.ended("lh")
		m.takeoverWithin(at.Sub(last), bound)
		t.Logf("leasehold leader cut off: it stopped leading %v after its last renewal ((L + R)/2 = %v after it began); client-go took over %v after that renewal, %v after the cut",
			ended.Sub(last), (mixedL+mixedR)/2, at.Sub(last), at.Sub(cut))
	})
	t.Run("client-go leader with a longer lease stops renewing", func(t *testing.T) {
		// The client-go leader, without ReleaseOnCancel, leads until RetryPeriod +
		// RenewDeadline = 4.5 s after its last renewal: longer than leasehold's L = 3 s. The
		// follower must wait for the 5 s the leader declared (E6).
		t.Parallel()
		long := goTiming{lease: 5 * time.Second, renew: 4 * time.Second, retry: 500 * time.Millisecond}
		m := newMixed(t, s)
		cg := m.clientGo("cg", long, false)
		m.waitLeader("cg", 10*time.Second)
		lh := m.leasehold("lh", mixedL, mixedR)
		m.steady(lh.wire)
		cg.cut.cut.Store(true)
		at := m.waitLeader("lh", long.lease+mixedR+slack+time.Second)
		last := cg.wire.lastWrite()
		m.finish()
		ended := m.led.ended("cg")
		if gap := at.Sub(last); gap < long.lease {
			t.Errorf("E6: leasehold (L = %v) took over %v after the last renewal of a leader that declared %v", mixedL, gap, long.lease)
		}
		m.takeoverWithin(at.Sub(last), long.lease+mixedR)
		t.Logf("client-go leader (LeaseDuration %v, RenewDeadline %v) cut off: it stopped leading %v after its last renewal; leasehold (L = %v) took over %v after it",
			long.lease, long.renew, ended.Sub(last), mixedL, at.Sub(last))
	})
}

// jittered is the longest wait of client-go's acquire loop between two tries: RetryPeriod
// plus up to JitterFactor times it.
func jittered(retry time.Duration) time.Duration {
	return retry + time.Duration(leaderelection.JitterFactor*float64(retry))
}

// mixed is one case of TestMixedFleet: instances of both kinds on the Lease "leader" of a
// namespace of their own, the record of who led when, and a sampler of who leads now.
type mixed struct {
	t   *testing.T
	s   *kubetest.APIServer
	ns  string
	led *ledger

	mu sync.Mutex
	lh map[string]*lhNode // read by the sampler

	hist *history // every version of the Lease

	stopSampling chan struct{}
	sampled      chan []string // what the sampler saw wrong
}

type lhNode struct {
	in   *instance
	wire *wire
}

func newMixed(t *testing.T, s *kubetest.APIServer) *mixed {
	m := &mixed{t: t, s: s, ns: grant(t, s, "get", "create", "update"), led: newLedger(), lh: map[string]*lhNode{},
		stopSampling: make(chan struct{}), sampled: make(chan []string, 1)}
	m.hist = watchHistory(t, s, m.ns, "leader")
	go m.sample()
	t.Cleanup(func() {
		select {
		case <-m.stopSampling:
		default:
			close(m.stopSampling)
		}
	})
	return m
}

// sample checks, every few milliseconds until finish, that at most one instance leads: a
// leasehold instance by its IsLeader, a client-go one while its OnStartedLeading context lives.
func (m *mixed) sample() {
	var wrong []string
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-m.stopSampling:
			m.sampled <- wrong
			return
		case <-tick.C:
		}
		var leaders []string
		m.mu.Lock()
		for id, n := range m.lh {
			if n.in.svc.IsLeader() {
				leaders = append(leaders, id)
			}
		}
		for _, id := range m.led.leading() {
			if _, ok := m.lh[id]; !ok {
				leaders = append(leaders, id)
			}
		}
		m.mu.Unlock()
		if len(leaders) > 1 && len(wrong) < 10 {
			sort.Strings(leaders)
			wrong = append(wrong, fmt.Sprintf("%s: %v", time.Now().Format("15:04:05.000"), leaders))
		}
	}
}

// finish waits until at most one instance leads, so that an overlap runs its whole course
// under the sampler, then stops the sampler and fails the test if two instances ever led at
// once, or if a write by either kind did not count the changes of holder in leaseTransitions
// as client-go does (history.check). It returns those changes.
func (m *mixed) finish() []change {
	m.t.Helper()
	if !m.led.waitSingle(10 * time.Second) {
		m.t.Errorf("several instances still lead: %s", m.led)
	}
	close(m.stopSampling)
	if wrong := <-m.sampled; len(wrong) > 0 {
		m.t.Errorf("two instances led at once, at the samples %s", strings.Join(wrong, "; "))
	}
	if o := m.led.overlaps(); len(o) > 0 {
		m.t.Errorf("leaderships overlap: %s", strings.Join(o, "; "))
	}
	kubectlGetLease(m.t, m.s, m.ns, "leader")
	changes := m.hist.check()
	m.t.Logf("changes of holder:\n%s", table(changes))
	return changes
}

func (m *mixed) takeoverWithin(gap, bound time.Duration) {
	m.t.Helper()
	if gap > bound+slack {
		m.t.Errorf("takeover %v after the last renewal, want at most %v (+%v slack)", gap, bound, slack)
	}
}

// steady lets the election run while the follower reads the Lease a few times, so that the
// follower has seen the leader renew and could have stolen the lease, before anything fails.
func (m *mixed) steady(follower *wire) {
	m.t.Helper()
	follower.waitReads(m.t, follower.reads()+6, 10*time.Second)
}

// waitLeader waits for id to start leading and returns when it started.
func (m *mixed) waitLeader(id string, timeout time.Duration) time.Time {
	m.t.Helper()
	return m.led.waitBegin(m.t, id, timeout)
}

// leasehold starts a leasehold instance as the restricted user, with its leaderships in the
// ledger.
func (m *mixed) leasehold(id string, l, r time.Duration) *lhNode {
	m.t.Helper()
	cfg, cut := userConfig(m.s)
	w := wrapWire(cfg)
	params := fmt.Sprintf(`"leaseName": "leader", "namespace": %q, "instanceId": %q, "leaseDuration": %d, "renewInterval": %d`,
		m.ns, id, l.Milliseconds(), r.Milliseconds())
	in, err := start(m.t, params, nil, func(c *ClusterService) {
		c.RESTConfig = cfg
		c.Observer = func(ev cluster.Event) {
			switch ev.Kind {
			case cluster.BecameLeader:
				m.led.begin(ev.Instance, ev.Time)
			case cluster.StoppedLeading:
				m.led.end(ev.Instance, ev.Time)
			}
		}
	})
	if err != nil {
		m.t.Fatal(err)
	}
	in.cut = cut
	n := &lhNode{in: in, wire: w}
	m.mu.Lock()
	m.lh[id] = n
	m.mu.Unlock()
	return n
}

// cgNode is a client-go elector.
type cgNode struct {
	id   string
	wire *wire
	cut  *cutter
	stop func() // cancels its Run, as a process exiting would
	done chan struct{}
}

// clientGo starts a client-go elector on the Lease as the restricted user.
func (m *mixed) clientGo(id string, tm goTiming, releaseOnCancel bool) *cgNode {
	m.t.Helper()
	return m.clientGoAs(id, id, tm, releaseOnCancel)
}

// clientGoAs is clientGo with a holder identity other than the name id under which the ledger
// records its leaderships: the identity of a leasehold instance, say.
func (m *mixed) clientGoAs(id, identity string, tm goTiming, releaseOnCancel bool) *cgNode {
	m.t.Helper()
	cfg, cut := userConfig(m.s)
	w := wrapWire(cfg)
	cs, err := k8s.NewForConfig(cfg)
	if err != nil {
		m.t.Fatal(err)
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: "leader", Namespace: m.ns},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
		},
		LeaseDuration:   tm.lease,
		RenewDeadline:   tm.renew,
		RetryPeriod:     tm.retry,
		ReleaseOnCancel: releaseOnCancel,
		Name:            "leader",
		Callbacks: leaderelection.LeaderCallbacks{
			// The guarded work runs as long as this context: that is the leadership.
			OnStartedLeading: func(ctx context.Context) {
				m.led.begin(id, time.Now())
				<-ctx.Done()
				m.led.end(id, time.Now())
			},
			OnStoppedLeading: func() { m.led.end(id, time.Now()) },
		},
	})
	if err != nil {
		m.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &cgNode{id: id, wire: w, cut: cut, done: make(chan struct{})}
	n.stop = cancel
	go func() {
		defer close(n.done)
		le.Run(ctx)
	}()
	m.t.Cleanup(func() {
		n.stop()
		select {
		case <-n.done:
		case <-time.After(tm.renew + 5*time.Second):
			m.t.Errorf("client-go elector %s: Run did not return", id)
		}
	})
	return n
}

// wire watches one instance's requests on Leases: its reads show a follower looking, its
// last successful write is its last renewal.
type wire struct {
	next http.RoundTripper

	mu      sync.Mutex
	nreads  int
	written time.Time
	changed chan struct{}
}

// wrapWire puts a wire above the transport of cfg, above its cutter: a request held by a cut
// network is no answer.
func wrapWire(cfg *rest.Config) *wire {
	w := &wire{changed: make(chan struct{})}
	inner := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		w.next = inner(rt)
		return w
	}
	return w
}

func (w *wire) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := w.next.RoundTrip(r)
	if err != nil || resp.StatusCode/100 != 2 || !strings.Contains(r.URL.Path, "/leases") {
		return resp, err
	}
	w.mu.Lock()
	switch r.Method {
	case http.MethodGet:
		w.nreads++
	case http.MethodPut, http.MethodPost:
		w.written = time.Now()
	}
	close(w.changed)
	w.changed = make(chan struct{})
	w.mu.Unlock()
	return resp, nil
}

// WrappedRoundTripper lets client-go reach the transport underneath.
func (w *wire) WrappedRoundTripper() http.RoundTripper { return w.next }

func (w *wire) reads() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nreads
}

func (w *wire) lastWrite() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.written
}

func (w *wire) waitReads(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		w.mu.Lock()
		got, changed := w.nreads, w.changed
		w.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("%d reads of the Lease within %v, want %d", got, timeout, n)
		}
	}
}

// ledger records who led when, on this process's clock, from the instances' callbacks.
type ledger struct {
	mu      sync.Mutex
	open    map[string]time.Time
	spans   []span // every leadership, in the order they began; to is zero while open
	changed chan struct{}
}

type span struct {
	id       string
	from, to time.Time
}

func newLedger() *ledger {
	return &ledger{open: map[string]time.Time{}, changed: make(chan struct{})}
}

func (l *ledger) begin(id string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.open[id]; ok {
		return
	}
	l.open[id] = at
	l.spans = append(l.spans, span{id: id, from: at})
	close(l.changed)
	l.changed = make(chan struct{})
}

// end closes id's open leadership at at; it does nothing when id does not lead.
func (l *ledger) end(id string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.open[id]; !ok {
		return
	}
	delete(l.open, id)
	for i := len(l.spans) - 1; i >= 0; i-- {
		if l.spans[i].id == id && l.spans[i].to.IsZero() {
			l.spans[i].to = at
			break
		}
	}
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *ledger) leading() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ids []string
	for id := range l.open {
		ids = append(ids, id)
	}
	return ids
}

// ended returns when id's last leadership ended, or the zero time.
func (l *ledger) ended(id string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.spans) - 1; i >= 0; i-- {
		if l.spans[i].id == id {
			return l.spans[i].to
		}
	}
	return time.Time{}
}

// waitBegin waits until id leads and returns when its leadership began.
func (l *ledger) waitBegin(t *testing.T, id string, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.After(timeout)
	for {
		l.mu.Lock()
		at, ok := l.open[id]
		changed := l.changed
		l.mu.Unlock()
		if ok {
			return at
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("%s did not lead within %v; leaderships %v", id, timeout, l.String())
		}
	}
}

// waitSingle waits until at most one instance leads, and says whether that happened within
// timeout.
func (l *ledger) waitSingle(timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		l.mu.Lock()
		n, changed := len(l.open), l.changed
		l.mu.Unlock()
		if n <= 1 {
			return true
		}
		select {
		case <-changed:
		case <-deadline:
			return false
		}
	}
}

// overlaps lists the pairs of leaderships of different instances that overlap; an open one
// lasts until now.
func (l *ledger) overlaps() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	to := func(s span) time.Time {
		if s.to.IsZero() {
			return now
		}
		return s.to
	}
	var out []string
	for i, a := range l.spans {
		for _, b := range l.spans[i+1:] {
			if a.id != b.id && a.from.Before(to(b)) && b.from.Before(to(a)) {
				out = append(out, fmt.Sprintf("%s [%s, %s] and %s [%s, %s]", a.id, clock(a.from), clock(to(a)), b.id, clock(b.from), clock(to(b))))
			}
		}
	}
	return out
}

func (l *ledger) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var parts []string
	for _, s := range l.spans {
		parts = append(parts, fmt.Sprintf("%s [%s, %s]", s.id, clock(s.from), clock(s.to)))
	}
	return strings.Join(parts, " ")
}

func clock(t time.Time) string {
	if t.IsZero() {
		return "…"
	}
	return t.Format("15:04:05.000")
}

// The premise of the rule L >= R + 2 s above: client-go tells a renewal from none by comparing
// the record as JSON, where renewTime has whole seconds, so two renewals within one second
// look the same to it. Should client-go ever compare finer, the rule could be relaxed.
func TestClientGoComparesRenewTimeInWholeSeconds(t *testing.T) {
	raw := func(renewed time.Time) string {
		holder, secs := "lh", int32(3)
		rt := metav1.NewMicroTime(renewed)
		rec := resourcelock.LeaseSpecToLeaderElectionRecord(&coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, RenewTime: &rt})
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if a, b := raw(base.Add(10*time.Millisecond)), raw(base.Add(990*time.Millisecond)); a != b {
		t.Errorf("client-go sees renewals 980 ms apart within one second as different:\n%s\n%s", a, b)
	}
	if a, b := raw(base.Add(990*time.Millisecond)), raw(base.Add(1010*time.Millisecond)); a == b {
		t.Errorf("client-go sees renewals across a second as the same: %s", a)
	}
}
