// Package prometheus exports the events of leasehold elections as Prometheus metrics.
//
// A [Collector] is fed by an Elector's Observer and is a prometheus.Collector:
//
//	c := prometheus.NewCollector()
//	e, err := cluster.NewElector(cluster.ElectorConfig{Lock: lock, Observer: c.Observe})
//	registry.MustRegister(c)
//
// With a StoreClusterService, set its Observer field to c.Observe before the application
// starts; to feed several observers, combine them with cluster.Observers.
//
// Metrics, each labelled with the lease name:
//
//	leasehold_is_leader{lease}                         1 while this instance leads, else 0
//	leasehold_term{lease}                              the last term seen (held or observed)
//	leasehold_transitions_total{lease,kind}            kind: became_leader, stopped_leading, observed_leader
//	leasehold_attempt_duration_seconds{lease}          histogram of attempt durations, failed ones included
//	leasehold_attempt_failures_total{lease,reason}     reason: error, conflict, timeout, late
//
// The values come from the events alone (no polling): is_leader turns 0 when the Elector
// reports StoppedLeading, which it does the moment its leadership deadline passes (E5).
package prometheus

import (
	"sync"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/leasehold/leasehold/cluster"
)

// Collector turns election events into metrics. One Collector may observe the elections of
// several leases (each is a label value). It is safe for concurrent use.
type Collector struct {
	isLeader    *prom.GaugeVec
	term        *prom.GaugeVec
	transitions *prom.CounterVec
	duration    *prom.HistogramVec
	failures    *prom.CounterVec

	mu    sync.Mutex
	known map[string]bool // leases whose series were initialized
}

var _ prom.Collector = (*Collector)(nil)

// Options tune a Collector.
type Options struct {
	// Buckets of leasehold_attempt_duration_seconds; default DefaultBuckets.
	Buckets []float64
	// ConstLabels are added to every metric (e.g. the application's name).
	ConstLabels prom.Labels
}

// DefaultBuckets suit attempts against a store: from a millisecond (embedded stores) to the
// default L - R of 10 s (an attempt timing out, E3).
var DefaultBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// Transition kinds counted by leasehold_transitions_total.
var transitionKinds = []cluster.EventKind{cluster.BecameLeader, cluster.StoppedLeading, cluster.ObservedLeader}

// NewCollector returns a Collector with the default options.
func NewCollector() *Collector { return NewCollectorWithOptions(Options{}) }

// NewCollectorWithOptions returns a Collector with the given options.
func NewCollectorWithOptions(o Options) *Collector {
	if o.Buckets == nil {
		o.Buckets = DefaultBuckets
	}
	return &Collector{
		isLeader: prom.NewGaugeVec(prom.GaugeOpts{
			Name: "leasehold_is_leader", Help: "1 while this instance leads the lease, else 0.",
			ConstLabels: o.ConstLabels,
		}, []string{"lease"}),
		term: prom.NewGaugeVec(prom.GaugeOpts{
			Name: "leasehold_term", Help: "The last term of the lease seen by this instance (a fencing token that grows with each change of holder).",
			ConstLabels: o.ConstLabels,
		}, []string{"lease"}),
		transitions: prom.NewCounterVec(prom.CounterOpts{
			Name: "leasehold_transitions_total", Help: "Leadership transitions seen by this instance, by kind: became_leader, stopped_leading, observed_leader (a new holder seen).",
			ConstLabels: o.ConstLabels,
		}, []string{"lease", "kind"}),
		duration: prom.NewHistogramVec(prom.HistogramOpts{
			Name: "leasehold_attempt_duration_seconds", Help: "Duration of the attempts to acquire or renew the lease, failed ones included.",
			Buckets: o.Buckets, ConstLabels: o.ConstLabels,
		}, []string{"lease"}),
		failures: prom.NewCounterVec(prom.CounterOpts{
			Name: "leasehold_attempt_failures_total", Help: "Failed attempts, by reason: error, conflict, timeout, late.",
			ConstLabels: o.ConstLabels,
		}, []string{"lease", "reason"}),
		known: map[string]bool{},
	}
}

// Init makes the series of lease visible at 0 before its first event, so that dashboards and
// alerts see the lease from the start. Observe calls it on a lease's first event.
func (c *Collector) Init(lease string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.initLocked(lease)
}

func (c *Collector) initLocked(lease string) {
	if c.known[lease] {
		return
	}
	c.known[lease] = true
	c.isLeader.WithLabelValues(lease)
	c.term.WithLabelValues(lease)
	c.duration.WithLabelValues(lease)
	for _, k := range transitionKinds {
		c.transitions.WithLabelValues(lease, k.String())
	}
	for _, r := range []string{cluster.ReasonError, cluster.ReasonConflict, cluster.ReasonTimeout, cluster.ReasonLate} {
		c.failures.WithLabelValues(lease, r)
	}
}

// Observe records one election event. Pass it as ElectorConfig.Observer (or
// StoreClusterService.Observer); it returns at once, as observers must.
func (c *Collector) Observe(ev cluster.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.initLocked(ev.Lease)
	switch ev.Kind {
	case cluster.BecameLeader:
		c.isLeader.WithLabelValues(ev.Lease).Set(1)
		c.term.WithLabelValues(ev.Lease).Set(float64(ev.Term))
		c.transitions.WithLabelValues(ev.Lease, ev.Kind.String()).Inc()
	case cluster.StoppedLeading:
		c.isLeader.WithLabelValues(ev.Lease).Set(0)
		c.transitions.WithLabelValues(ev.Lease, ev.Kind.String()).Inc()
	case cluster.ObservedLeader:
		c.term.WithLabelValues(ev.Lease).Set(float64(ev.Term))
		c.transitions.WithLabelValues(ev.Lease, ev.Kind.String()).Inc()
	case cluster.AttemptSucceeded:
		c.duration.WithLabelValues(ev.Lease).Observe(ev.Duration.Seconds())
		if ev.Term != 0 {
			c.term.WithLabelValues(ev.Lease).Set(float64(ev.Term))
		}
	case cluster.AttemptFailed:
		// A late success (E5) was already counted as an attempt by its AttemptSucceeded.
		if ev.Reason != cluster.ReasonLate {
			c.duration.WithLabelValues(ev.Lease).Observe(ev.Duration.Seconds())
		}
		c.failures.WithLabelValues(ev.Lease, ev.Reason).Inc()
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prom.Desc) {
	c.isLeader.Describe(ch)
	c.term.Describe(ch)
	c.transitions.Describe(ch)
	c.duration.Describe(ch)
	c.failures.Describe(ch)
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prom.Metric) {
	c.isLeader.Collect(ch)
	c.term.Collect(ch)
	c.transitions.Collect(ch)
	c.duration.Collect(ch)
	c.failures.Collect(ch)
}
