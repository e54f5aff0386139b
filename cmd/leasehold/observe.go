package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/leasehold/leasehold/cluster"
	leaseholdprom "github.com/leasehold/leasehold/metrics/prometheus"
)

// electionView follows the events of this instance's election, for /healthz and /status.
type electionView struct {
	lease, id string
	l, r      time.Duration
	elector   func() *cluster.Elector

	mu            sync.Mutex
	started       time.Time
	leading       bool // by the events: BecameLeader seen, StoppedLeading not yet
	term          uint64
	holder        string
	lastSuccess   time.Time
	lastFailure   time.Time
	failureReason string
	failureError  string
	mismatchSince time.Time // when /healthz first saw the events say leading past the deadline
}

func newElectionView(el *election) *electionView {
	return &electionView{lease: el.lease, id: el.id, l: el.l, r: el.r, elector: el.elector, started: time.Now()}
}

// observe is the view's cluster observer: it only records, as observers must.
func (v *electionView) observe(ev cluster.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch ev.Kind {
	case cluster.BecameLeader:
		v.leading, v.term, v.holder = true, ev.Term, v.id
	case cluster.StoppedLeading:
		v.leading = false
	case cluster.ObservedLeader:
		v.term, v.holder = ev.Term, ev.Holder
	case cluster.AttemptSucceeded, cluster.WatchedChange:
		// A follower whose watch is healthy sends no attempts (E9): a change the watch
		// brought shows the store answering as well.
		v.lastSuccess = ev.Time
	case cluster.AttemptFailed:
		v.lastFailure, v.failureReason = ev.Time, ev.Reason
		if ev.Err != nil {
			v.failureError = ev.Err.Error()
		}
	}
}

func (v *electionView) isLeader() (bool, uint64) {
	e := v.elector()
	if e == nil {
		return false, 0
	}
	term, ok := e.Term()
	return ok, term
}

// healthy says whether the election works, as client-go's HealthzAdaptor does: an instance is
// unhealthy when it has not completed a successful attempt within L (its store hangs or
// fails: it can neither lead nor take over), or when its events say it leads although its
// leadership deadline has passed (W7: the election goroutine is stuck), for more than R.
func (v *electionView) healthy(now time.Time) error {
	leader, _ := v.isLeader()
	v.mu.Lock()
	defer v.mu.Unlock()
	last := v.lastSuccess
	if last.IsZero() {
		last = v.started
	}
	if age := now.Sub(last); age > v.l {
		why := "none yet"
		if v.failureReason != "" {
			why = "last failure: " + v.failureReason
			if v.failureError != "" {
				why += ": " + v.failureError
			}
		}
		return fmt.Errorf("no successful attempt for %v, more than the lease duration %v (%s)", age.Round(time.Millisecond), v.l, why)
	}
	if v.leading && !leader {
		if v.mismatchSince.IsZero() {
			v.mismatchSince = now
		}
		if now.Sub(v.mismatchSince) > v.r {
			return fmt.Errorf("leading past the leadership deadline for %v", now.Sub(v.mismatchSince).Round(time.Millisecond))
		}
	} else {
		v.mismatchSince = time.Time{}
	}
	return nil
}

// cmdView is the CMD part of /status: supervise.State (run converts one to the other), with
// its JSON names.
type cmdView struct {
	Running    bool `json:"running"`
	PID        int  `json:"pid,omitempty"`
	Starts     int  `json:"starts"`
	LastStatus *int `json:"lastStatus,omitempty"`
}

// statusView is the JSON of /status.
type statusView struct {
	Lease             string     `json:"lease"`
	Instance          string     `json:"instance"`
	Leader            bool       `json:"leader"`
	Term              uint64     `json:"term"`
	Holder            string     `json:"holder"`
	LeaseDuration     float64    `json:"leaseDurationSeconds"`
	RenewInterval     float64    `json:"renewIntervalSeconds"`
	LastSuccess       *time.Time `json:"lastSuccessfulAttempt,omitempty"`
	LastFailure       *time.Time `json:"lastFailedAttempt,omitempty"`
	LastFailureReason string     `json:"lastFailureReason,omitempty"`
	Healthy           bool       `json:"healthy"`
	HealthError       string     `json:"healthError,omitempty"`
	Command           *cmdView   `json:"cmd,omitempty"`
}

func (v *electionView) status(now time.Time) statusView {
	herr := v.healthy(now)
	leader, term := v.isLeader()
	v.mu.Lock()
	defer v.mu.Unlock()
	s := statusView{
		Lease: v.lease, Instance: v.id, Leader: leader, Term: v.term, Holder: v.holder,
		LeaseDuration: v.l.Seconds(), RenewInterval: v.r.Seconds(), Healthy: herr == nil,
		LastFailureReason: v.failureReason,
	}
	if leader {
		s.Term, s.Holder = term, v.id
	}
	if herr != nil {
		s.HealthError = herr.Error()
	}
	s.LastSuccess, s.LastFailure = utcOrNil(v.lastSuccess), utcOrNil(v.lastFailure)
	return s
}

// serveMetrics serves /metrics, /healthz and /status on ln until the returned function is
// called.
func serveMetrics(ln net.Listener, c *leaseholdprom.Collector, v *electionView, cmd func() cmdView) (shutdown func()) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if err := v.healthy(time.Now()); err != nil {
			http.Error(w, "unhealthy: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		s := v.status(time.Now())
		if cmd != nil {
			c := cmd()
			s.Command = &c
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln) // returns http.ErrServerClosed on Close
	}()
	return func() {
		_ = srv.Close()
		<-done
	}
}
