package prometheus

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/store/memory"
)

const (
	testL = 3 * time.Second
	testR = time.Second
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func elector(t *testing.T, lock cluster.Lock, id string, c *Collector) *cluster.Elector {
	t.Helper()
	e, err := cluster.NewElector(cluster.ElectorConfig{
		Lock: lock, LeaseName: "jobs", LeaseDuration: testL, RenewInterval: testR,
		InstanceID: id, Logger: quiet(), Observer: c.Observe,
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func value(t *testing.T, c prom.Collector) float64 {
	t.Helper()
	return testutil.ToFloat64(c)
}

// family gathers c and returns the metric family named name with the given label values.
func metric(t *testing.T, c *Collector, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	reg := prom.NewPedanticRegistry()
	reg.MustRegister(c)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
					continue next
				}
			}
			return m
		}
	}
	t.Fatalf("no metric %s%v", name, labels)
	return nil
}

// A leader and a follower export what they see: is_leader, term, transitions by kind; a clean
// stop hands the lease over (E7) and the new term shows (W8).
func TestCollectorLeaderAndFollower(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := memory.New()
		ca, cb := NewCollector(), NewCollector()
		a := elector(t, cluster.NewStoreLock(mem), "a", ca)
		b := elector(t, cluster.NewStoreLock(mem), "b", cb)
		if err := a.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := b.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()

		if err := testutil.CollectAndCompare(ca, strings.NewReader(`
# HELP leasehold_is_leader 1 while this instance leads the lease, else 0.
# TYPE leasehold_is_leader gauge
leasehold_is_leader{lease="jobs"} 1
# HELP leasehold_term The last term of the lease seen by this instance (a fencing token that grows with each change of holder).
# TYPE leasehold_term gauge
leasehold_term{lease="jobs"} 1
`), "leasehold_is_leader", "leasehold_term"); err != nil {
			t.Fatal(err)
		}
		if v := value(t, ca.transitions.WithLabelValues("jobs", "became_leader")); v != 1 {
			t.Errorf("leader: transitions{became_leader} = %v, want 1", v)
		}
		if v := value(t, cb.isLeader.WithLabelValues("jobs")); v != 0 {
			t.Errorf("follower: is_leader = %v, want 0", v)
		}
		if v := value(t, cb.transitions.WithLabelValues("jobs", "observed_leader")); v != 1 {
			t.Errorf("follower: transitions{observed_leader} = %v, want 1", v)
		}
		if v := value(t, cb.term.WithLabelValues("jobs")); v != 1 {
			t.Errorf("follower: term = %v, want 1", v)
		}

		if err := a.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // b's watch reports the release, and b takes the lease at once (E9)
		if v := value(t, ca.isLeader.WithLabelValues("jobs")); v != 0 {
			t.Errorf("stopped leader: is_leader = %v, want 0", v)
		}
		if v := value(t, ca.transitions.WithLabelValues("jobs", "stopped_leading")); v != 1 {
			t.Errorf("stopped leader: transitions{stopped_leading} = %v, want 1", v)
		}
		if v := value(t, cb.isLeader.WithLabelValues("jobs")); v != 1 {
			t.Errorf("new leader: is_leader = %v, want 1", v)
		}
		if v := value(t, cb.term.WithLabelValues("jobs")); v != 2 {
			t.Errorf("new leader: term = %v, want 2", v)
		}
		// Attempts: b made two (follow, take over); each is one histogram sample.
		if n := metric(t, cb, "leasehold_attempt_duration_seconds", nil).GetHistogram().GetSampleCount(); n != 2 {
			t.Errorf("new leader: attempt_duration_seconds count = %d, want 2", n)
		}
		if err := b.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

type errLock struct{}

var errDown = errors.New("store down")

func (errLock) Get(context.Context, string) (cluster.Record, error) { return cluster.Record{}, errDown }
func (errLock) Create(context.Context, string, cluster.Record) (cluster.Record, error) {
	return cluster.Record{}, errDown
}
func (errLock) Update(context.Context, string, cluster.Record) (cluster.Record, error) {
	return cluster.Record{}, errDown
}

// hangLock answers nothing until the attempt's context ends.
type hangLock struct{}

func (hangLock) Get(ctx context.Context, _ string) (cluster.Record, error) {
	<-ctx.Done()
	return cluster.Record{}, ctx.Err()
}
func (hangLock) Create(ctx context.Context, _ string, _ cluster.Record) (cluster.Record, error) {
	<-ctx.Done()
	return cluster.Record{}, ctx.Err()
}
func (hangLock) Update(ctx context.Context, _ string, _ cluster.Record) (cluster.Record, error) {
	<-ctx.Done()
	return cluster.Record{}, ctx.Err()
}

// Failed attempts are counted by reason: a backend error (E8) and no answer within L - R (E3),
// and their durations are histogram samples (a timeout lasts L - R).
func TestCollectorFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewCollector()
		e := elector(t, errLock{}, "a", c)
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(testR) // a second attempt
		synctest.Wait()
		if err := e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if v := value(t, c.failures.WithLabelValues("jobs", "error")); v != 2 {
			t.Errorf("failures{error} = %v, want 2", v)
		}
		if v := value(t, c.isLeader.WithLabelValues("jobs")); v != 0 {
			t.Errorf("is_leader = %v, want 0", v)
		}

		c = NewCollector()
		e = elector(t, hangLock{}, "b", c)
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(testL - testR)
		synctest.Wait()
		stopCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = e.Stop(stopCtx) // the attempt in flight never answers: Stop gives up, nothing to release
		cancel()
		if v := value(t, c.failures.WithLabelValues("jobs", "timeout")); v != 1 {
			t.Errorf("failures{timeout} = %v, want 1", v)
		}
		h := metric(t, c, "leasehold_attempt_duration_seconds", nil).GetHistogram()
		if h.GetSampleCount() != 1 || h.GetSampleSum() != (testL-testR).Seconds() {
			t.Errorf("attempt_duration_seconds count %d sum %v, want 1 and %v", h.GetSampleCount(), h.GetSampleSum(), (testL - testR).Seconds())
		}
	})
}

// Init shows a lease's series at 0 before any event, and the metrics pass promlint.
func TestCollectorInitAndLint(t *testing.T) {
	c := NewCollectorWithOptions(Options{ConstLabels: prom.Labels{"app": "demo"}})
	c.Init("jobs")
	if n := testutil.CollectAndCount(c); n != 1+1+3+1+4 {
		t.Errorf("series after Init = %d, want %d", n, 1+1+3+1+4)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	if v := metric(t, c, "leasehold_is_leader", map[string]string{"app": "demo"}).GetGauge().GetValue(); v != 0 {
		t.Errorf("is_leader after Init = %v, want 0", v)
	}
}
