//go:build unix

package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/failovertest"
	"github.com/leasehold/leasehold/internal/storecluster"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/internal/testurl"
	"github.com/leasehold/leasehold/internal/watchtest"
)

// The tests of a primary with a streaming standby that is promoted (internal/storecluster): the
// store names both servers in its URL with target_session_attrs=read-write.

// startStandbyCluster starts a primary and its standby, stopped when the test ends.
func startStandbyCluster(t *testing.T) storecluster.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	c, err := storecluster.StartPostgres(ctx, t.TempDir())
	if errors.Is(err, storecluster.ErrUnavailable) {
		testenv.Unavailable(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// openCluster opens a store on the cluster's table (the cluster is the test's own).
func openCluster(t *testing.T, c storecluster.Cluster, addrs []string, params map[string]string) *Store {
	t.Helper()
	p := map[string]string{"table": "lease"}
	for k, v := range params {
		p[k] = v
	}
	s, err := Open(t.Context(), c.URL(addrs, p))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestParseURLSeveralHosts: libpq's multi-host form is taken, every host kept by pgx, and
// target_session_attrs=read-write makes pgx check each connection (no server needed).
func TestParseURLSeveralHosts(t *testing.T) {
	u := testurl.Parse(t, "postgres://u@127.0.0.1:5001,127.0.0.1:5002/db?target_session_attrs=read-write")
	cfg, _, err := parseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	hosts := []string{fmt.Sprintf("%s:%d", cfg.ConnConfig.Host, cfg.ConnConfig.Port)}
	for _, f := range cfg.ConnConfig.Fallbacks {
		hosts = append(hosts, fmt.Sprintf("%s:%d", f.Host, f.Port))
	}
	// sslmode=prefer (the default) tries each host with TLS, then without.
	if want := []string{"127.0.0.1:5001", "127.0.0.1:5002"}; !slices.Equal(slices.Compact(hosts), want) {
		t.Fatalf("hosts %v; want %v", hosts, want)
	}
	if cfg.ConnConfig.ValidateConnect == nil {
		t.Fatal("target_session_attrs=read-write set no check of the connection")
	}
}

// The store's connections, its listening one included, go to the primary even when the standby
// is named first: the writes succeed, and a watch gets their notifications (a LISTEN on a
// standby fails: it cannot execute LISTEN during recovery).
func TestStandbyNamedFirst(t *testing.T) {
	c := startStandbyCluster(t)
	ms := c.Members()
	s := openCluster(t, c, []string{ms[1].Addr, ms[0].Addr}, nil)
	r := watchtest.Start(t, s, "k")
	r.Next(t)
	if err := s.Create(t.Context(), "k", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	r.WaitDoc(t, map[string]any{"n": float64(1)})
	if on := serverOf(t, c, s.b.listenerPID()); on != ms[0] {
		t.Fatalf("the listening connection is on %v; want the primary %s", on, ms[0].Name)
	}
}

// serverOf returns the member that runs the backend process pid (the members are processes of
// this machine, so their backends' process IDs differ), nil when none does.
func serverOf(t *testing.T, c storecluster.Cluster, pid uint32) *storecluster.Member {
	t.Helper()
	for _, m := range c.Members() {
		if !m.Running() {
			continue
		}
		conn, err := pgx.Connect(t.Context(), c.URL([]string{m.Addr}, map[string]string{"target_session_attrs": "any"}))
		if err != nil {
			t.Fatal(err)
		}
		var n int
		err = conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, int32(pid)).Scan(&n)
		conn.Close(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			return m
		}
	}
	return nil
}

// promotion returns when the cluster's last failover began promoting the standby, and when
// the promotion was seen done: no write succeeds between the old primary's end and began, and
// clients can write through the new primary from a moment between began and done.
func promotion(t *testing.T, c storecluster.Cluster) (began, done time.Time) {
	t.Helper()
	p, ok := c.(interface{ Promotion() (time.Time, time.Time) })
	if !ok {
		t.Fatal("the cluster does not say when it promoted its standby")
	}
	began, done = p.Promotion()
	if began.IsZero() || done.IsZero() {
		t.Fatal("the cluster did not promote its standby")
	}
	return began, done
}

// electionLog records the events of the electors of one lease, and checks that no two lead at
// once: at each event it samples IsLeader of every elector, and at the end it compares the
// leaderships' intervals (BecameLeader to StoppedLeading).
type electionLog struct {
	electors map[string]*cluster.Elector
	logs     bytes.Buffer // the electors' logs, shown when the test fails
	stopped  sync.Once

	mu     sync.Mutex
	events []electionEvent
	two    []string // events at which two electors led
	notify chan struct{}
}

type electionEvent struct {
	inst string
	ev   cluster.Event
}

// newElection creates an elector per id, each over its own store (L = 600ms, R = 200ms, as
// the failover test), none started.
func newElection(t *testing.T, stores map[string]*Store) *electionLog {
	l := &electionLog{electors: map[string]*cluster.Elector{}, notify: make(chan struct{}, 1)}
	logger := slog.New(slog.NewTextHandler(&syncWriter{w: &l.logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for id, s := range stores {
		e, err := cluster.NewElector(cluster.ElectorConfig{
			Lock:          cluster.NewStoreLock(s),
			LeaseName:     "leader",
			LeaseDuration: failovertest.LeaseDuration,
			RenewInterval: failovertest.RenewInterval,
			InstanceID:    id,
			Logger:        logger,
			Observer:      func(ev cluster.Event) { l.observe(id, ev) },
		})
		if err != nil {
			t.Fatal(err)
		}
		l.electors[id] = e
	}
	t.Cleanup(func() {
		l.stop(t)
		if t.Failed() {
			t.Logf("events:\n%s", l.timeline())
			t.Logf("electors' logs:\n%s", l.logs.String())
		}
	})
	return l
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (l *electionLog) observe(id string, ev cluster.Event) {
	var leaders []string
	for other, e := range l.electors {
		if e.IsLeader() {
			leaders = append(leaders, other)
		}
	}
	l.mu.Lock()
	l.events = append(l.events, electionEvent{inst: id, ev: ev})
	if len(leaders) > 1 {
		l.two = append(l.two, fmt.Sprintf("%s %s at %s: leaders %v", id, ev.Kind, ev.Time.Format(time.RFC3339Nano), leaders))
	}
	l.mu.Unlock()
	select {
	case l.notify <- struct{}{}:
	default:
	}
}

func (l *electionLog) start(t *testing.T, id string) {
	t.Helper()
	if err := l.electors[id].Start(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// wait returns the first event after from that match accepts, failing the test after timeout.
func (l *electionLog) wait(t *testing.T, what string, from time.Time, timeout time.Duration, match func(electionEvent) bool) electionEvent {
	t.Helper()
	deadline := time.After(timeout)
	for {
		l.mu.Lock()
		for _, e := range l.events {
			if e.ev.Time.After(from) && match(e) {
				l.mu.Unlock()
				return e
			}
		}
		l.mu.Unlock()
		select {
		case <-l.notify:
		case <-deadline:
			t.Fatalf("no %s within %v", what, timeout)
		}
	}
}

// leading matches an event that shows its instance leading: it became leader or renewed.
func leading(e electionEvent) bool {
	return e.ev.Kind == cluster.BecameLeader || (e.ev.Kind == cluster.AttemptSucceeded && e.ev.Holder == e.inst)
}

// renewalHeard matches a record of another holder that a follower's watch brought.
func renewalHeard(e electionEvent) bool {
	return e.ev.Kind == cluster.WatchedChange && e.ev.Holder != "" && e.ev.Holder != e.inst
}

func kind(inst string, k cluster.EventKind) func(electionEvent) bool {
	return func(e electionEvent) bool { return e.inst == inst && e.ev.Kind == k }
}

// stop stops every elector and checks, once, that no two led at once.
func (l *electionLog) stop(t *testing.T) {
	l.stopped.Do(func() { l.stopAndCheck(t) })
}

func (l *electionLog) stopAndCheck(t *testing.T) {
	for _, e := range l.electors {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := e.Stop(ctx); err != nil {
			t.Errorf("stop %s: %v", e.InstanceID(), err)
		}
		cancel()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.two {
		t.Errorf("two leaders at once: %s", s)
	}
	type span struct {
		inst       string
		from, till time.Time
	}
	var spans []span
	open := map[string]time.Time{}
	for _, e := range l.events {
		switch e.ev.Kind {
		case cluster.BecameLeader:
			open[e.inst] = e.ev.Time
		case cluster.StoppedLeading:
			if from, ok := open[e.inst]; ok {
				spans = append(spans, span{e.inst, from, e.ev.Time})
				delete(open, e.inst)
			}
		}
	}
	for inst, from := range open {
		spans = append(spans, span{inst, from, time.Now()})
	}
	for i, a := range spans {
		for _, b := range spans[i+1:] {
			if a.inst != b.inst && a.from.Before(b.till) && b.from.Before(a.till) {
				t.Errorf("%s led from %s to %s, and %s from %s to %s", a.inst, a.from.Format(time.RFC3339Nano), a.till.Format(time.RFC3339Nano),
					b.inst, b.from.Format(time.RFC3339Nano), b.till.Format(time.RFC3339Nano))
			}
		}
	}
}

func (l *electionLog) timeline() string {
	var b strings.Builder
	for _, e := range l.events {
		fmt.Fprintf(&b, "%s %s %s holder=%q term=%d reason=%q err=%v\n", e.ev.Time.Format("15:04:05.000"), e.inst, e.ev.Kind,
			e.ev.Holder, e.ev.Term, e.ev.Reason, e.ev.Err)
	}
	return b.String()
}

// settle starts a, waits for it to lead, starts b and waits for b to learn of a's renewals by
// its watch.
func (l *electionLog) settle(t *testing.T) {
	t.Helper()
	begin := time.Now()
	l.start(t, "a")
	l.wait(t, "leadership of a", begin, 30*time.Second, kind("a", cluster.BecameLeader))
	l.start(t, "b")
	l.wait(t, "change b learns by its watch", begin, 30*time.Second, kind("b", cluster.WatchedChange))
}

// E6, E9 over a promoted standby: the elector leading over the primary leads again (it, or the
// other one) within L + R of the promotion: an attempt in flight then ends within L - R (E3)
// and the next starts within R, on a connection to the new primary. (Counted from when pg_ctl
// saw the promotion done: how long the server takes to promote is not the clients'.) The follower then learns
// of the leader's renewals by its watch, which has moved to the new primary, and of its release
// too (E7).
func TestStandbyPromotedElection(t *testing.T) {
	c := startStandbyCluster(t)
	l := newElection(t, map[string]*Store{"a": openCluster(t, c, nil, nil), "b": openCluster(t, c, nil, nil)})
	l.settle(t)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	begin := time.Now()
	if err := c.Failover(ctx, false); err != nil {
		t.Fatal(err)
	}
	t.Logf("failover took %v", time.Since(begin))
	promoted, done := promotion(t, c)
	t.Logf("the promotion took at most %v", done.Sub(promoted))
	back := l.wait(t, "leadership after the promotion", promoted, 30*time.Second, leading)
	took := back.ev.Time.Sub(done)
	bound := failovertest.LeaseDuration + failovertest.RenewInterval + failovertest.Slack
	t.Logf("%s leads %v after the promotion began, %v after it was seen done (%s; bound %v)", back.inst,
		back.ev.Time.Sub(promoted), took, back.ev.Kind, bound)
	if took > bound {
		t.Errorf("%s leads %v after the promotion was done; want within L + R + slack = %v", back.inst, took, bound)
	}
	// Only the new primary sends notifications now: a follower's watch that brings a renewal
	// listens there.
	heard := l.wait(t, "renewal a follower learns by its watch on the new primary", back.ev.Time, 30*time.Second, renewalHeard)
	follower, holder := heard.inst, heard.ev.Holder
	t.Logf("%s learned of a renewal by %s by its watch %v after the promotion", follower, holder, heard.ev.Time.Sub(promoted))
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if leader != c.Members()[1] {
		t.Fatalf("the primary is %s; want the promoted %s", leader.Name, c.Members()[1].Name)
	}

	released := time.Now()
	if err := l.electors[holder].Stop(ctx); err != nil {
		t.Fatal(err)
	}
	release := l.wait(t, "release the follower learns by its watch", released, 30*time.Second, func(e electionEvent) bool {
		return e.inst == follower && e.ev.Kind == cluster.WatchedChange && e.ev.Holder == ""
	})
	took = l.wait(t, "takeover after the release", released, 30*time.Second, kind(follower, cluster.BecameLeader)).ev.Time.Sub(released)
	t.Logf("%s learned of the release by its watch %v after the stop began, and leads %v after", follower,
		release.ev.Time.Sub(released), took)
}

// E6 with asynchronous replication: the standby is promoted without the last writes the old
// primary acknowledged, renewals among them; the lease record goes back to an older revision,
// which every elector sees as a change (revisions are random tokens), never as a licence to
// lead beside another. Never two leaders at once; a writer's acknowledged writes were indeed
// lost, or the test would prove nothing.
func TestStandbyPromotedLosingWrites(t *testing.T) {
	c := startStandbyCluster(t)
	l := newElection(t, map[string]*Store{"a": openCluster(t, c, nil, nil), "b": openCluster(t, c, nil, nil)})
	l.settle(t)

	w := openCluster(t, c, nil, nil)
	if err := w.Create(t.Context(), "probe", map[string]any{"n": 0}); err != nil {
		t.Fatal(err)
	}
	acked := make(chan int, 1)
	go func() {
		n := 0
		// Until the old primary dies under it: it writes through the failover's detach.
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err := w.Patch(ctx, "probe", map[string]any{"n": n + 1}, nil)
			cancel()
			if err != nil {
				acked <- n
				return
			}
			n++
		}
	}()

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	begin := time.Now()
	if err := c.Failover(ctx, true); err != nil {
		t.Fatal(err)
	}
	t.Logf("failover took %v", time.Since(begin))
	promoted, done := promotion(t, c)
	t.Logf("the promotion took at most %v", done.Sub(promoted))
	last := <-acked
	doc, err := w.Get(ctx, "probe")
	if err != nil {
		t.Fatal(err)
	}
	kept := int(doc["n"].(float64))
	t.Logf("the writer's last acknowledged write was n=%d; the promoted standby has n=%d", last, kept)
	if kept >= last {
		t.Fatalf("no acknowledged write was lost (last acknowledged %d, kept %d): the failover did not lose writes", last, kept)
	}

	back := l.wait(t, "leadership after the promotion", promoted, 30*time.Second, leading)
	t.Logf("%s leads %v after the promotion began, %v after it was seen done (%s)", back.inst, back.ev.Time.Sub(promoted),
		back.ev.Time.Sub(done), back.ev.Kind)
	// Several renewals after, a follower keeping up by its watch: the election has settled on
	// the new primary.
	from := back.ev.Time
	for range 3 {
		from = l.wait(t, "renewal a follower learns by its watch", from, 30*time.Second, renewalHeard).ev.Time
	}
	l.stop(t)
}

// With synchronous replication (synchronous_commit on, the default, and
// synchronous_standby_names naming the standby), a write is not acknowledged while the standby
// does not answer (paused: its processes stopped): it waits until its context ends, an unknown
// outcome, never a success, whatever the server's statement_timeout. The writes did commit on
// the primary, and are there once the standby answers again: only an unknown outcome is true.
func TestStandbySynchronousWriteWaits(t *testing.T) {
	c := startStandbyCluster(t)
	ms := c.Members()
	admin, err := pgx.Connect(t.Context(), c.URL(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	for _, q := range []string{`ALTER SYSTEM SET synchronous_standby_names = '"` + ms[1].Name + `"'`, `SELECT pg_reload_conf()`} {
		if _, err := admin.Exec(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	synced := time.After(30 * time.Second)
	for {
		var state string
		if err := admin.QueryRow(t.Context(), `SELECT sync_state FROM pg_stat_replication WHERE application_name = $1`, ms[1].Name).Scan(&state); err != nil {
			t.Fatal(err)
		}
		if state == "sync" {
			break
		}
		select {
		case <-synced:
			t.Fatal("the standby is not synchronous after 30s")
		case <-time.After(50 * time.Millisecond):
		}
	}
	s := openCluster(t, c, nil, nil)
	if err := s.Create(t.Context(), "k", map[string]any{"n": 0}); err != nil {
		t.Fatal(err)
	}

	if err := ms[1].Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := ms[1].Resume(); err != nil {
				t.Error(err)
			}
		}
	}
	defer resume()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	sent := time.Now()
	err = s.Patch(ctx, "k", map[string]any{"n": 1}, nil)
	cancel()
	t.Logf("write while the synchronous standby is paused: %v after %v", err, time.Since(sent))
	if err == nil {
		t.Fatal("a write was acknowledged while the synchronous standby was paused")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("write while the synchronous standby is paused: %v; want an unknown outcome (its context's deadline)", err)
	}
	// The server's statement_timeout does not end the wait (PostgreSQL turns it off before the
	// commit): only the client's context does.
	st := openCluster(t, c, nil, map[string]string{"statement_timeout": "200"})
	if _, err := st.Get(t.Context(), "k"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(t.Context(), 2*time.Second)
	sent = time.Now()
	err = st.Patch(ctx, "k", map[string]any{"n": 2}, nil)
	cancel()
	t.Logf("write with statement_timeout=200 while the synchronous standby is paused: %v after %v", err, time.Since(sent))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("write with statement_timeout=200 while the synchronous standby is paused: %v; want an unknown outcome (its context's deadline)", err)
	}
	resume()
	doc, err := s.Get(t.Context(), "k")
	if err != nil {
		t.Fatal(err)
	}
	if doc["n"] != float64(2) {
		t.Fatalf("after the standby resumed: %v; want n=2, the writes committed on the primary", doc)
	}
}
