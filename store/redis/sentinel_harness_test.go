package redis

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/storecluster"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/store"
)

// startSentinels starts Redis with a replica behind three Sentinels in the test's directory.
func startSentinels(t *testing.T) *storecluster.RedisCluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	c, err := storecluster.StartRedis(ctx, t.TempDir())
	if errors.Is(err, storecluster.ErrUnavailable) {
		testenv.Unavailable(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*storecluster.RedisCluster)
}

// sentinelURL is the cluster's URL with a key prefix of its own and extra parameters.
func sentinelURL(t *testing.T, c *storecluster.RedisCluster, params map[string]string) string {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	p := map[string]string{"prefix": "leasehold-test:" + hex.EncodeToString(b) + ":"}
	for k, v := range params {
		p[k] = v
	}
	return c.URL(nil, p)
}

func openSentinel(t *testing.T, raw string) *Store {
	t.Helper()
	s, err := Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Timing of the elections over the cluster, as in internal/failovertest.
const (
	sentinelL     = 600 * time.Millisecond
	sentinelR     = 200 * time.Millisecond
	sentinelSlack = 300 * time.Millisecond
)

// election is three Electors over one lease, each with its own store. Every event samples
// IsLeader of all of them: never two at once (W7); the leaderships, by the events and by the
// callbacks, are checked for overlaps at the end.
type election struct {
	t     *testing.T
	lease string
	l, r  time.Duration
	// overlapAllowed, when not zero, makes overlaps up to it a logged finding, not an error.
	overlapAllowed time.Duration
	overlaps       []time.Duration
	finished       sync.Once
	start          time.Time
	insts          []*electionInst
	logs           syncLog
	notify         chan struct{}

	mu        sync.Mutex
	events    []sample
	callbacks []leaderCall
	replaced  map[string]time.Time // revisions a successful Update replaced, and when
	rollbacks []rollback
}

// rollback is a revision an instance read, or wrote on, after an acknowledged Update had
// replaced it: the record went back.
type rollback struct {
	id, rev string
	at      time.Time
	op      string
}

// recordingLock is an instance's Lock, recording the revisions it reads and replaces.
type recordingLock struct {
	cluster.Lock
	w  cluster.Watcher
	el *election
	id string
}

func (l recordingLock) Get(ctx context.Context, name string) (cluster.Record, error) {
	start := time.Now()
	r, err := l.Lock.Get(ctx, name)
	if err == nil {
		l.el.saw(l.id, "read", r.Revision, start)
	}
	return r, err
}

func (l recordingLock) Update(ctx context.Context, name string, r cluster.Record) (cluster.Record, error) {
	prev, start := r.Revision, time.Now()
	u, err := l.Lock.Update(ctx, name, r)
	if err == nil {
		l.el.saw(l.id, "wrote on", prev, start)
		l.el.mu.Lock()
		if _, ok := l.el.replaced[prev]; !ok {
			l.el.replaced[prev] = time.Now()
		}
		l.el.mu.Unlock()
	}
	return u, err
}

func (l recordingLock) Watch(ctx context.Context, name string, fn func(cluster.Record, error)) error {
	return l.w.Watch(ctx, name, fn)
}

// saw notes a revision read or written on by a call that started at start: a rollback when
// an acknowledged Update had replaced it before.
func (el *election) saw(id, op, rev string, start time.Time) {
	el.mu.Lock()
	defer el.mu.Unlock()
	if at, ok := el.replaced[rev]; ok && at.Before(start) {
		el.rollbacks = append(el.rollbacks, rollback{id: id, rev: rev, at: time.Now(), op: op})
	}
}

type electionInst struct {
	id string
	e  *cluster.Elector
	s  *Store
}

type sample struct {
	ev      cluster.Event
	leaders []string
}

type leaderCall struct {
	id    string
	start bool
	at    time.Time
}

func startElection(t *testing.T, raw string) *election {
	t.Helper()
	return startElectionTimed(t, raw, sentinelL, sentinelR, 0)
}

// startElectionTimed is startElection with lease duration l, renew interval r, and overlaps
// up to overlapAllowed reported rather than failed.
func startElectionTimed(t *testing.T, raw string, l, r, overlapAllowed time.Duration) *election {
	t.Helper()
	el := &election{t: t, l: l, r: r, overlapAllowed: overlapAllowed, start: time.Now(), notify: make(chan struct{}, 1), replaced: map[string]time.Time{}}
	logger := slog.New(slog.NewTextHandler(&el.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	el.lease = strings.ReplaceAll(t.Name(), "/", "-")
	for i := range 3 {
		in := &electionInst{id: fmt.Sprintf("i%d", i+1), s: openSentinel(t, raw)}
		lock := cluster.NewStoreLock(in.s)
		e, err := cluster.NewElector(cluster.ElectorConfig{
			Lock:          recordingLock{Lock: lock, w: lock.(cluster.Watcher), el: el, id: in.id},
			LeaseName:     el.lease,
			LeaseDuration: l,
			RenewInterval: r,
			InstanceID:    in.id,
			Logger:        logger,
			Observer:      el.observe,
		})
		if err != nil {
			t.Fatal(err)
		}
		in.e = e
		id := in.id
		remove := e.WhenLeader(func(ctx context.Context) error {
			el.call(leaderCall{id: id, start: true, at: time.Now()})
			<-ctx.Done()
			return nil
		}, func() { el.call(leaderCall{id: id, at: time.Now()}) })
		t.Cleanup(remove)
		el.insts = append(el.insts, in)
	}
	for _, in := range el.insts {
		if err := in.e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		el.finish()
		if t.Failed() {
			t.Logf("timeline:\n%s", el.timeline())
			t.Logf("electors' logs:\n%s", el.logs.String())
		}
	})
	return el
}

// finish stops every Elector and checks the leaderships for overlaps, once; it returns the
// overlaps found.
func (el *election) finish() []time.Duration {
	el.finished.Do(func() {
		for _, in := range el.insts {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := in.e.Stop(ctx); err != nil {
				el.t.Errorf("Stop of %s: %v", in.id, err)
			}
			cancel()
		}
		el.checkOverlaps()
	})
	el.mu.Lock()
	defer el.mu.Unlock()
	return slices.Clone(el.overlaps)
}

func (el *election) observe(ev cluster.Event) {
	var leaders []string
	for _, in := range el.insts {
		if in.e.IsLeader() {
			leaders = append(leaders, in.id)
		}
	}
	el.mu.Lock()
	el.events = append(el.events, sample{ev, leaders})
	el.mu.Unlock()
	select {
	case el.notify <- struct{}{}:
	default:
	}
	if len(leaders) > 1 && el.overlapAllowed == 0 {
		el.t.Errorf("W7: at %s of %s, %v all say IsLeader", ev.Kind, ev.Instance, leaders)
	}
}

func (el *election) call(c leaderCall) {
	el.mu.Lock()
	el.callbacks = append(el.callbacks, c)
	el.mu.Unlock()
}

func (el *election) mark() int {
	el.mu.Lock()
	defer el.mu.Unlock()
	return len(el.events)
}

// waitFor waits for an event from index from on that match accepts.
func (el *election) waitFor(what string, from int, timeout time.Duration, match func(sample) bool) sample {
	el.t.Helper()
	deadline := time.After(timeout)
	for next := from; ; {
		el.mu.Lock()
		evs := el.events[next:]
		el.mu.Unlock()
		for _, s := range evs {
			next++
			if match(s) {
				return s
			}
		}
		select {
		case <-el.notify:
		case <-deadline:
			el.t.Fatalf("%s: not within %v", what, timeout)
		}
	}
}

// leading waits for a successful attempt, after at, of an instance that leads alone.
func (el *election) leading(what string, from int, at time.Time) sample {
	el.t.Helper()
	return el.waitFor(what, from, 30*time.Second, func(s sample) bool {
		return s.ev.Kind == cluster.AttemptSucceeded && s.ev.Time.After(at) &&
			len(s.leaders) == 1 && s.leaders[0] == s.ev.Instance
	})
}

// checkOverlaps checks that no two instances' leaderships overlap, by the events and by the
// callbacks (W3, W7).
func (el *election) checkOverlaps() {
	type interval struct {
		id         string
		start, end time.Time
	}
	var byEvents, byCalls []interval
	open, fnOpen := map[string]time.Time{}, map[string]time.Time{}
	el.mu.Lock()
	for _, s := range el.events {
		switch s.ev.Kind {
		case cluster.BecameLeader:
			open[s.ev.Instance] = s.ev.Time
		case cluster.StoppedLeading:
			if st, ok := open[s.ev.Instance]; ok {
				byEvents = append(byEvents, interval{s.ev.Instance, st, s.ev.Time})
				delete(open, s.ev.Instance)
			}
		}
	}
	for _, c := range el.callbacks {
		if c.start {
			fnOpen[c.id] = c.at
		} else if st, ok := fnOpen[c.id]; ok {
			byCalls = append(byCalls, interval{c.id, st, c.at})
			delete(fnOpen, c.id)
		}
	}
	el.mu.Unlock()
	for _, set := range [][]interval{byEvents, byCalls} {
		for i, a := range set {
			for _, b := range set[i+1:] {
				if a.id != b.id && a.start.Before(b.end) && b.start.Before(a.end) {
					over := minTime(a.end, b.end).Sub(maxTime(a.start, b.start))
					el.mu.Lock()
					el.overlaps = append(el.overlaps, over)
					el.mu.Unlock()
					if el.overlapAllowed > 0 && over <= el.overlapAllowed {
						el.t.Logf("the leaderships of %s [%v, %v] and %s [%v, %v] overlap for %v",
							a.id, a.start.Sub(el.start), a.end.Sub(el.start), b.id, b.start.Sub(el.start), b.end.Sub(el.start), over)
						continue
					}
					el.t.Errorf("W7: the leaderships of %s [%v, %v] and %s [%v, %v] overlap",
						a.id, a.start.Sub(el.start), a.end.Sub(el.start), b.id, b.start.Sub(el.start), b.end.Sub(el.start))
				}
			}
		}
	}
}

// timeline formats the events from index from on.
func (el *election) timelineFrom(from int) string {
	el.mu.Lock()
	defer el.mu.Unlock()
	var b strings.Builder
	for _, s := range el.events[from:] {
		ev := s.ev
		fmt.Fprintf(&b, "%6d %s %-17s term=%d", ev.Time.Sub(el.start).Milliseconds(), ev.Instance, ev.Kind, ev.Term)
		if ev.Holder != "" {
			fmt.Fprintf(&b, " holder=%s", ev.Holder)
		}
		if ev.Reason != "" {
			fmt.Fprintf(&b, " reason=%s", ev.Reason)
		}
		if ev.Err != nil {
			fmt.Fprintf(&b, " err=%q", ev.Err)
		}
		fmt.Fprintf(&b, " leaders=%v\n", s.leaders)
	}
	return b.String()
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (el *election) timeline() string { return el.timelineFrom(0) }

// promotion returns a channel that receives the time at which the Sentinels first name another
// primary than old, and the new primary answers as a master.
func promotion(t *testing.T, c *storecluster.RedisCluster, old *storecluster.Member) <-chan time.Time {
	ch := make(chan time.Time, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	go func() {
		defer cancel()
		if _, err := c.WaitPromoted(ctx, old); err != nil {
			t.Errorf("no promotion: %v", err)
			close(ch)
			return
		}
		ch <- time.Now()
	}()
	return ch
}

type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var _ store.Store = (*Store)(nil)
