package kubernetes

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

// verbCounter is a transport that counts the requests of one instance by verb: get, list,
// watch, create, update (an HTTP request each).
type verbCounter struct {
	next http.RoundTripper

	mu sync.Mutex
	n  map[string]int
}

func (c *verbCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[verbOf(r)]++
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

// WrappedRoundTripper lets client-go reach the transport under the counter (to close its idle
// connections).
func (c *verbCounter) WrappedRoundTripper() http.RoundTripper { return c.next }

func (c *verbCounter) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[string]int{}
	for k, v := range c.n {
		m[k] = v
	}
	return m
}

// verbOf names the API verb of a request on leases, as RBAC does.
func verbOf(r *http.Request) string {
	switch r.Method {
	case http.MethodGet:
		switch {
		case r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1":
			return "watch"
		case strings.HasSuffix(r.URL.Path, "/leases"):
			return "list"
		}
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	}
	return strings.ToLower(r.Method)
}

func minus(a, b map[string]int) map[string]int {
	d := map[string]int{}
	for k, v := range a {
		if v != b[k] {
			d[k] = v - b[k]
		}
	}
	return d
}

// E9 over the Lease watch (K1): three instances (L = 2 s, R = 500 ms) with the watch verb. In
// steady state the leader sends one update per R and the followers only watch. A Kubernetes
// watch sends no heartbeat, so the followers take the leader's renewals, which their watches
// bring once per R, for its proof of life (cluster.HeartbeatWatcher), trusted for R + R/2:
// with R, every renewal that came a little later than R after the one before made them read
// first (0.7 reads per follower per R), and a read that saw a renewal before the watch brought
// it left the watch unproved until the next. Counted over 20 renewals of the leader once each
// follower's watch has brought one: every request of each instance, by verb, and the
// renewals each follower's watch brought.
func TestSteadyStateFollowersOnlyWatch(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "create", "update", "watch")
	ev := newEvents()
	ids := []string{"pod-a", "pod-b", "pod-c"}
	counters := map[string]*verbCounter{}
	for _, id := range ids {
		c := &verbCounter{}
		cfg := s.Config(s.UserToken)
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { c.next = rt; return c }
		params := fmt.Sprintf(`"leaseName": "leader", "namespace": %q, "instanceId": %q, "leaseDuration": %d, "renewInterval": %d`,
			ns, id, testL.Milliseconds(), testR.Milliseconds())
		if _, err := start(t, params, ev, func(cs *ClusterService) { cs.RESTConfig = cfg }); err != nil {
			t.Fatal(err)
		}
		counters[id] = c
	}
	var from int
	leader := ev.wait(t, &from, 10*time.Second, "a first leader", kind(cluster.BecameLeader)).Instance
	var followers []string
	for _, id := range ids {
		if id != leader {
			followers = append(followers, id)
		}
	}
	brought := func(id string) func(cluster.Event) bool {
		return func(e cluster.Event) bool {
			return e.Kind == cluster.WatchedChange && e.Instance == id && e.Holder == leader
		}
	}
	// The window opens once each follower's watch has brought a renewal: its watch is up.
	for _, id := range followers {
		at := from
		ev.wait(t, &at, 10*time.Second, id+"'s watch bringing a renewal of "+leader, brought(id))
	}
	mark := ev.mark()
	base := map[string]map[string]int{}
	for _, id := range ids {
		base[id] = counters[id].counts()
	}
	const renewals = 20
	at := mark
	for i := range renewals {
		ev.wait(t, &at, 10*time.Second, fmt.Sprintf("renewal %d of %s", i+1, leader), kindOf(cluster.AttemptSucceeded, leader))
	}
	d := map[string]map[string]int{}
	for _, id := range ids {
		d[id] = minus(counters[id].counts(), base[id])
	}
	window := ev.snapshot()[mark:]
	for _, e := range window {
		if e.Kind == cluster.BecameLeader || e.Kind == cluster.StoppedLeading {
			t.Fatalf("the leadership changed during the window (%v of %s): the machine is too loaded to count a steady state", e.Kind, e.Instance)
		}
	}
	if u := d[leader]["update"]; u < renewals-1 || u > renewals+1 {
		t.Errorf("the leader sent %d updates over %d renewals; want one per renewal", u, renewals)
	}
	if len(d[leader]) != 1 {
		t.Errorf("the leader's requests: %v; want updates only", d[leader])
	}
	t.Logf("%s, the leader, over %d renewals: %v", leader, renewals, d[leader])
	reads := 0
	for _, id := range followers {
		heard := 0
		for _, e := range window {
			if brought(id)(e) {
				heard++
			}
		}
		t.Logf("%s, a follower: %v; its watch brought %d renewals", id, d[id], heard)
		for verb, n := range d[id] {
			if verb != "get" {
				t.Errorf("%s sent %d %s requests in steady state; want none", id, n, verb)
			}
		}
		reads += d[id]["get"]
		// A renewal is not brought as a change once a read has seen it; the last may be on
		// its way.
		if heard < renewals-2-d[id]["get"] {
			t.Errorf("%s's watch brought %d of the leader's %d renewals; want them all", id, heard, renewals)
		}
	}
	// A read comes only when a renewal reaches a watch more than R/2 (250 ms) later than R after
	// the one before: none on a quiet machine, a few on a loaded one (CI runs this module beside
	// others), never one a renewal per follower, as before watches without heartbeats were
	// trusted for R + R/2 (20 reads over 20 renewals, 10 a follower). Half that is the limit.
	if limit := renewals / 2; reads > limit {
		t.Errorf("the followers read %d times over %d renewals; want at most %d (their watches prove themselves alive by the renewals)", reads, renewals, limit)
	}
}
