package kubernetes

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/leakcheck"
	"github.com/leasehold/leasehold/kubernetes/internal/kubetest"
)

// kubectlGetLease prints the Lease as `kubectl get lease -o custom-columns` would, with its
// holder, leaseTransitions (the changes of holder), term (the annotation AnnotationTerm),
// duration and renew time, for the test log (and docs/kubernetes.md).
func kubectlGetLease(t *testing.T, s *kubetest.APIServer, ns, name string) (holder string, transitions int32, term string) {
	t.Helper()
	admin, err := k8s.NewForConfig(s.Config(s.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	lease, err := admin.CoordinationV1().Leases(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sp := lease.Spec
	holder, transitions = holderOf(lease), transitionsOf(lease)
	term, ok := lease.Annotations[AnnotationTerm]
	if !ok {
		term = "<none>"
	}
	renew := "<none>"
	if sp.RenewTime != nil {
		renew = sp.RenewTime.UTC().Format("2006-01-02T15:04:05.000000Z")
	}
	duration := "<none>"
	if sp.LeaseDurationSeconds != nil {
		duration = strconv.Itoa(int(*sp.LeaseDurationSeconds))
	}
	t.Logf("$ kubectl -n %s get lease %s -o custom-columns='NAME:.metadata.name,HOLDER:.spec.holderIdentity,TRANSITIONS:.spec.leaseTransitions,TERM:.metadata.annotations.leasehold\\.dev/term,DURATION:.spec.leaseDurationSeconds,RENEWED:.spec.renewTime'\n%-8s %-8s %-11s %-9s %-8s %s\n%-8s %-8s %-11d %-9s %-8s %s",
		ns, name, "NAME", "HOLDER", "TRANSITIONS", "TERM", "DURATION", "RENEWED", lease.Name, holder, transitions, term, duration, renew)
	return holder, transitions, term
}

// TestThreeInstances runs three KubernetesClusterService instances (L = 2 s, R = 500 ms) as
// the restricted user:
//   - exactly one leads, and the Lease's holderIdentity names it (E2, K1);
//   - the leader abandoned without Stop (its network cut, as a crash) stops leading by E5 and
//     is replaced within L + R of its last renewal (E6);
//   - a clean Stop releases the lease and another instance leads within R (E7);
//   - the term grows at each change of holder (W8), and leaseTransitions, the count of
//     changes of holder, by exactly 1 (K1).
func TestThreeInstances(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "create", "update")
	h := watchHistory(t, s, ns, "leader")
	ev := newEvents()
	ids := []string{"pod-a", "pod-b", "pod-c"}
	byID := map[string]*instance{}
	for _, id := range ids {
		byID[id] = startUser(t, s, ns, id, ev)
	}

	var from int
	first := ev.wait(t, &from, 10*time.Second, "first leader", kind(cluster.BecameLeader))
	leader1 := first.Instance
	// Every instance sees the same holder.
	for _, id := range ids {
		at := 0
		ev.wait(t, &at, 5*time.Second, id+" observing "+leader1, func(e cluster.Event) bool {
			return e.Kind == cluster.ObservedLeader && e.Instance == id && e.Holder == leader1
		})
	}
	leaders := 0
	for _, id := range ids {
		if byID[id].svc.IsLeader() {
			leaders++
			if id != leader1 {
				t.Errorf("%s leads, but %s became the leader", id, leader1)
			}
		}
	}
	if leaders != 1 {
		t.Fatalf("%d instances lead, want exactly 1", leaders)
	}
	holder, transitions, term := kubectlGetLease(t, s, ns, "leader")
	if holder != leader1 || transitions != 0 || term != strconv.FormatUint(first.Term, 10) {
		t.Fatalf("Lease holderIdentity %q, leaseTransitions %d, term %s; want %q, 0, %d", holder, transitions, term, leader1, first.Term)
	}

	// Crash: the leader's network is cut (requests hang); it never releases.
	mark := ev.mark()
	byID[leader1].cut.cut.Store(true)
	stopped := ev.wait(t, &mark, testL, leader1+" stopping leading (E5)", kindOf(cluster.StoppedLeading, leader1))
	from = mark
	second := ev.wait(t, &from, testL+testR+slack+time.Second, "a new leader after the crash", kind(cluster.BecameLeader))
	lastRenewal := lastSuccess(ev.snapshot(), leader1)
	if second.Instance == leader1 {
		t.Fatalf("the abandoned %s leads again", leader1)
	}
	if gap := second.Time.Sub(lastRenewal.Time); gap > testL+testR+slack {
		t.Errorf("E6: %s took over %v after %s's last renewal, want at most L + R = %v (+%v slack)", second.Instance, gap, leader1, testL+testR, slack)
	}
	// E5: the abandoned leader stopped within (L+R)/2 of the start of its last successful attempt.
	deadline := lastRenewal.Time.Add(-lastRenewal.Duration).Add((testL + testR) / 2)
	if late := stopped.Time.Sub(deadline); late > slack {
		t.Errorf("E5: %s stopped leading %v after its deadline", leader1, late)
	}
	// Its attempt hangs (timeout L - R = 1.5 s, E3): E5's deadline, (L + R) / 2 = 1.25 s after the
	// last success started, ends the leadership first.
	if stopped.Reason != cluster.ReasonDeadline {
		t.Errorf("E5: %s stopped leading for %q, want %q", leader1, stopped.Reason, cluster.ReasonDeadline)
	}
	t.Logf("crash of %s: it stopped leading %v after its last renewal (%s); %s took over %v after it (bound L + R = %v)",
		leader1, stopped.Time.Sub(lastRenewal.Time), stopped.Reason, second.Instance, second.Time.Sub(lastRenewal.Time), testL+testR)
	if byID[leader1].svc.IsLeader() {
		t.Errorf("W7: the abandoned %s still says it leads", leader1)
	}
	if second.Term <= first.Term {
		t.Errorf("W8: term %d after the crash, want more than %d", second.Term, first.Term)
	}
	holder, transitions, term = kubectlGetLease(t, s, ns, "leader")
	if holder != second.Instance || transitions != 1 || term != strconv.FormatUint(second.Term, 10) {
		t.Fatalf("Lease holderIdentity %q, leaseTransitions %d, term %s; want %q, 1, %d", holder, transitions, term, second.Instance, second.Term)
	}

	// Clean Stop: the lease is released and the third instance leads at its next attempt.
	var third string
	for _, id := range ids {
		if id != leader1 && id != second.Instance {
			third = id
		}
	}
	mark = ev.mark()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := byID[second.Instance].app.Stop(ctx); err != nil {
		t.Fatalf("Stop of %s: %v", second.Instance, err)
	}
	released := time.Now()
	handover := ev.wait(t, &mark, testR+slack+time.Second, third+" leading after the clean Stop", kindOf(cluster.BecameLeader, third))
	if gap := handover.Time.Sub(released); gap > testR+slack {
		t.Errorf("E7: %s took over %v after the release, want at most R = %v (+%v slack)", third, gap, testR, slack)
	}
	t.Logf("clean Stop of %s: %s took over %v after the release (bound R = %v)", second.Instance, third, handover.Time.Sub(released), testR)
	if handover.Term <= second.Term {
		t.Errorf("W8: term %d after the handover, want more than %d", handover.Term, second.Term)
	}
	holder, transitions, term = kubectlGetLease(t, s, ns, "leader")
	if holder != third || transitions != 2 || term != strconv.FormatUint(handover.Term, 10) {
		t.Fatalf("Lease holderIdentity %q, leaseTransitions %d, term %s; want %q, 2, %d", holder, transitions, term, third, handover.Term)
	}
	changes := h.check()
	t.Logf("changes of holder:\n%s", table(changes))
	if len(changes) != 3 {
		t.Errorf("%d changes of holder, want 3 (the first leader, after the crash, after the Stop)", len(changes))
	}
}

// lastSuccess is id's last AttemptSucceeded event.
func lastSuccess(list []cluster.Event, id string) cluster.Event {
	var last cluster.Event
	for _, e := range list {
		if e.Kind == cluster.AttemptSucceeded && e.Instance == id {
			last = e
		}
	}
	return last
}

// TestAPIServerKilled: the API server dies (SIGKILL) under a running election. The leader stops
// leading by E5's deadline, errors are only logged (E8); after a restart on the same etcd, an
// instance leads again.
func TestAPIServerKilled(t *testing.T) {
	bin := binaries(t)
	env, err := kubetest.Start(t.TempDir(), bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	s := env.API
	ns := grant(t, s, "get", "create", "update")
	ev := newEvents()
	a := startUser(t, s, ns, "pod-a", ev)
	b := startUser(t, s, ns, "pod-b", ev)
	var from int
	first := ev.wait(t, &from, 10*time.Second, "a leader", kind(cluster.BecameLeader))
	// Let the leader renew once, so that its last success is a renewal.
	ev.wait(t, &from, 2*testR+slack, "a renewal", kindOf(cluster.AttemptSucceeded, first.Instance))

	mark := ev.mark()
	s.Kill()
	stopped := ev.wait(t, &mark, testL+slack, first.Instance+" stopping leading (E5)", kindOf(cluster.StoppedLeading, first.Instance))
	last := lastSuccess(ev.snapshot(), first.Instance)
	deadline := last.Time.Add(-last.Duration).Add((testL + testR) / 2)
	if late := stopped.Time.Sub(deadline); late > slack {
		t.Errorf("E5: stopped leading %v after the deadline", late)
	}
	t.Logf("API server killed: %s stopped leading %v after the start of its last successful attempt (%s; E5 bound (L + R)/2 = %v)",
		first.Instance, stopped.Time.Sub(last.Time.Add(-last.Duration)), stopped.Reason, (testL+testR)/2)
	if a.svc.IsLeader() || b.svc.IsLeader() {
		t.Errorf("an instance says it leads while the API server is down")
	}
	// E8: the attempts fail and go on.
	ev.wait(t, &mark, 2*testR+slack, "a failed attempt", kind(cluster.AttemptFailed))

	mark = ev.mark()
	restarted := time.Now()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	again := ev.wait(t, &mark, testL+testR+slack+5*time.Second, "a leader after the restart", kind(cluster.BecameLeader))
	if again.Term < first.Term {
		t.Errorf("term %d after the restart, below %d: etcd lost the Lease", again.Term, first.Term)
	}
	t.Logf("API server restarted: %s leads again %v after the restart began", again.Instance, again.Time.Sub(restarted))
	kubectlGetLease(t, s, ns, "leader")
	for _, in := range []*instance{a, b} {
		select {
		case <-in.svc.Elector().Done():
			t.Errorf("%s's election ended", in.svc.InstanceID())
		default:
		}
	}
}

// TestNoGoroutineOutlivesStop: after Stop, none of the goroutines the service started (the
// election's, the HTTP client's connections) is left.
func TestNoGoroutineOutlivesStop(t *testing.T) {
	s := api(t)
	ns := grant(t, s, "get", "create", "update")
	ev := newEvents()
	tr := leakcheck.New()
	var in *instance
	// A Dial of its own keeps client-go from sharing a cached transport whose connections
	// other tests' goroutines opened: every connection here is the service's.
	cfg, _ := userConfig(s)
	cfg.Dial = (&net.Dialer{}).DialContext
	params := fmt.Sprintf(`"namespace": %q, "instanceId": "pod-a", "leaseDuration": 2000, "renewInterval": 500`, ns)
	tr.Do(func() {
		var err error
		if in, err = start(t, params, ev, func(c *ClusterService) { c.RESTConfig = cfg }); err != nil {
			t.Error(err)
		}
	})
	if in == nil {
		t.FailNow()
	}
	var from int
	ev.wait(t, &from, 10*time.Second, "leadership", kind(cluster.BecameLeader))
	ev.wait(t, &from, 2*testR+slack, "a renewal", kind(cluster.AttemptSucceeded))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := in.app.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	tr.Check(t, 2*time.Second)
}
