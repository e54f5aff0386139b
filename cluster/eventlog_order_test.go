package cluster_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/faultstore"
	"github.com/leasehold/leasehold/store/memory"
)

// orderCheck is a log handler and an Observer of one Elector: at each log line that reports
// an event, the Observer must already have had that event.
type orderCheck struct {
	mu     sync.Mutex
	seen   map[cluster.EventKind]int // events the Observer had
	lines  map[cluster.EventKind]int // lines that reported one
	errs   []string
	logged []string
}

// reported is the event each line reports.
var reported = map[string]cluster.EventKind{
	"leasehold: became leader":                     cluster.BecameLeader,
	"leasehold: stopped leading":                   cluster.StoppedLeading,
	"leasehold: observed leader":                   cluster.ObservedLeader,
	"leasehold: attempt failed":                    cluster.AttemptFailed,
	"leasehold: lost the race to create the lease": cluster.AttemptFailed,
}

func newOrderCheck() *orderCheck {
	return &orderCheck{seen: map[cluster.EventKind]int{}, lines: map[cluster.EventKind]int{}}
}

func (c *orderCheck) observe(ev cluster.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[ev.Kind]++
}

func (c *orderCheck) Enabled(context.Context, slog.Level) bool { return true }
func (c *orderCheck) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *orderCheck) WithGroup(string) slog.Handler            { return c }
func (c *orderCheck) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.logged = append(c.logged, r.Message)
	kind, ok := reported[r.Message]
	if !ok {
		return nil
	}
	c.lines[kind]++
	if c.seen[kind] < c.lines[kind] {
		c.errs = append(c.errs, fmt.Sprintf("%q logged before the Observer had its %v event (%d lines, %d events)", r.Message, kind, c.lines[kind], c.seen[kind]))
	}
	return nil
}

// TestObserverHasTheEventBeforeItsLogLine: a program that reads one of the Elector's log
// lines about an event ("became leader", "observed leader", "stopped leading", "attempt
// failed") may count on its Observer having that event: the command reads its own state from
// the Observer when it stops, and a stop right after "observed leader" must say whom it
// followed.
func TestObserverHasTheEventBeforeItsLogLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		sa, sb := faultstore.New(mem), faultstore.New(mem)
		ca, cb := newOrderCheck(), newOrderCheck()
		start := func(id string, s *faultstore.Store, c *orderCheck) *cluster.Elector {
			e, err := cluster.NewElector(cluster.ElectorConfig{
				Lock: cluster.NewStoreLock(s), LeaseDuration: 3 * time.Second, RenewInterval: time.Second,
				InstanceID: id, Logger: slog.New(c), Observer: c.observe,
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			return e
		}
		a := start("a", sa, ca)
		synctest.Wait()
		b := start("b", sb, cb) // observes a
		time.Sleep(2 * time.Second)
		sb.Set(func(f *faultstore.Store) { f.Err = faultstore.ErrInjected }) // b's attempts fail
		time.Sleep(2 * time.Second)
		sb.Heal()
		sa.Set(func(f *faultstore.Store) { f.Err = faultstore.ErrInjected }) // a stops leading (E5), b takes over
		time.Sleep(10 * time.Second)
		sa.Heal()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		for _, e := range []*cluster.Elector{a, b} {
			if err := e.Stop(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for name, c := range map[string]*orderCheck{"a": ca, "b": cb} {
			c.mu.Lock()
			for _, e := range c.errs {
				t.Errorf("%s: %s", name, e)
			}
			c.mu.Unlock()
		}
		// The scenario must have made every line it checks.
		for _, want := range []struct {
			c    *orderCheck
			kind cluster.EventKind
		}{{ca, cluster.BecameLeader}, {ca, cluster.StoppedLeading}, {ca, cluster.AttemptFailed}, {cb, cluster.ObservedLeader}, {cb, cluster.AttemptFailed}, {cb, cluster.BecameLeader}} {
			if want.c.lines[want.kind] == 0 {
				t.Errorf("no line reported %v (lines %v)", want.kind, want.c.logged)
			}
		}
	})
}
