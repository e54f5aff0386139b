package kubernetes

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/kubernetes/internal/kubetest"
)

// The tests' lease timing: L = 2 s, R = 500 ms.
const (
	testL = 2 * time.Second
	testR = 500 * time.Millisecond
	// slack absorbs the API server's latency and the scheduling of a loaded 2-core machine
	// in the real-time bounds below; the bounds themselves are the design's (E5, E6, E7).
	slack = 750 * time.Millisecond
)

// shared is the control plane most tests use, started once by TestMain; skipReason says why
// there is none.
var (
	shared     *kubetest.Env
	skipReason string
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	bin, err := kubetest.FindBinaries()
	if err != nil {
		skipReason = err.Error()
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "leasehold-kubetest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	env, err := kubetest.Start(dir, bin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubernetes tests: cannot start the control plane:", err)
		return 1
	}
	defer env.Stop()
	shared = env
	return m.Run()
}

// binaries returns the directory of kube-apiserver and etcd, or skips the test
// (fails it under LEASEHOLD_REQUIRE_KUBE=1).
func binaries(t *testing.T) string {
	t.Helper()
	dir, err := kubetest.FindBinaries()
	if err != nil {
		skipOrFail(t, err.Error())
	}
	return dir
}

func skipOrFail(t *testing.T, why string) {
	t.Helper()
	if os.Getenv(kubetest.RequireEnv) == "1" {
		t.Fatalf("%s=1 and %s", kubetest.RequireEnv, why)
	}
	t.Skipf("no Kubernetes API server: %s", why)
}

// api returns the shared API server, or skips the test.
func api(t *testing.T) *kubetest.APIServer {
	t.Helper()
	if shared == nil {
		skipOrFail(t, skipReason)
	}
	return shared.API
}

var nsCount atomic.Int64

// grant creates a fresh namespace for the test in which the restricted user has only verbs
// on leases, and returns its name.
func grant(t *testing.T, s *kubetest.APIServer, verbs ...string) string {
	t.Helper()
	name := strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "-"))
	if len(name) > 50 {
		name = name[:50]
	}
	ns := fmt.Sprintf("%s-%d", strings.Trim(name, "-"), nsCount.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Grant(ctx, ns, verbs...); err != nil {
		t.Fatal(err)
	}
	return ns
}

// cutter is a transport whose network can be cut, to abandon an instance as a crash or a
// partition would: it stops renewing without releasing. Once cut, a request hangs until its
// context ends, as over a network that drops every packet.
type cutter struct {
	next http.RoundTripper
	cut  atomic.Bool
}

func (c *cutter) RoundTrip(r *http.Request) (*http.Response, error) {
	if c.cut.Load() {
		<-r.Context().Done()
		return nil, fmt.Errorf("test: network cut: %w", r.Context().Err())
	}
	return c.next.RoundTrip(r)
}

// WrappedRoundTripper lets client-go reach the transport under the cutter (to close its idle
// connections).
func (c *cutter) WrappedRoundTripper() http.RoundTripper { return c.next }

// userConfig is a client configuration as the restricted user, through a cutter.
func userConfig(s *kubetest.APIServer) (*rest.Config, *cutter) {
	c := &cutter{}
	cfg := s.Config(s.UserToken)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { c.next = rt; return c }
	return cfg, c
}

// events records the events of one or more instances; tests wait on them instead of
// sleeping.
type events struct {
	mu      sync.Mutex
	list    []cluster.Event
	changed chan struct{} // closed and replaced at each event
}

func newEvents() *events { return &events{changed: make(chan struct{})} }

func (e *events) observe(ev cluster.Event) {
	e.mu.Lock()
	e.list = append(e.list, ev)
	close(e.changed)
	e.changed = make(chan struct{})
	e.mu.Unlock()
}

// snapshot returns the events so far.
func (e *events) snapshot() []cluster.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]cluster.Event(nil), e.list...)
}

// wait returns the first event at index *from or later that matches, and moves *from past
// it; it fails the test after timeout.
func (e *events) wait(t *testing.T, from *int, timeout time.Duration, what string, match func(cluster.Event) bool) cluster.Event {
	t.Helper()
	deadline := time.After(timeout)
	for {
		e.mu.Lock()
		for i := *from; i < len(e.list); i++ {
			if match(e.list[i]) {
				*from = i + 1
				ev := e.list[i]
				e.mu.Unlock()
				return ev
			}
		}
		*from = len(e.list)
		changed := e.changed
		e.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no %s within %v", what, timeout)
		}
	}
}

// mark returns the index of the next event, to wait for events after this point.
func (e *events) mark() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.list)
}

func kind(k cluster.EventKind) func(cluster.Event) bool {
	return func(ev cluster.Event) bool { return ev.Kind == k }
}

func kindOf(k cluster.EventKind, instance string) func(cluster.Event) bool {
	return func(ev cluster.Event) bool { return ev.Kind == k && ev.Instance == instance }
}

// instance is one application running a KubernetesClusterService.
type instance struct {
	app *leasehold.Application
	svc *ClusterService
	cut *cutter
}

// start runs an application whose configuration is one service "cluster" of type
// Webda/KubernetesClusterService with params (JSON members, without braces); setup, when not
// nil, adjusts the service before Start. Its log goes to the test's output if the test fails.
// The application is stopped at the end of the test.
func start(t *testing.T, params string, ev *events, setup func(*ClusterService)) (*instance, error) {
	t.Helper()
	cfg, err := leasehold.ParseConfig([]byte(`{"services": {"cluster": {"type": "Webda/KubernetesClusterService", ` + params + `}}}`))
	if err != nil {
		t.Fatal(err)
	}
	app, err := leasehold.New(cfg)
	if err != nil {
		return nil, err
	}
	var logs syncBuffer
	app.SetLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	svc := app.Cluster().(*ClusterService) // the service exists before Start (A5)
	if ev != nil {
		svc.Observer = ev.observe
	}
	if setup != nil {
		setup(svc)
	}
	if err := app.Start(context.Background()); err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = app.Stop(ctx) // an abandoned instance cannot release: its error is expected
		if t.Failed() {
			t.Logf("log of %s:\n%s", svc.InstanceID(), logs.String())
		}
	})
	return &instance{app: app, svc: svc}, nil
}

// startUser starts an instance with instanceId id in namespace ns, authenticated as the
// restricted user through a cutter, with the tests' L and R.
func startUser(t *testing.T, s *kubetest.APIServer, ns, id string, ev *events) *instance {
	t.Helper()
	cfg, cut := userConfig(s)
	params := fmt.Sprintf(`"leaseName": "leader", "namespace": %q, "instanceId": %q, "leaseDuration": %d, "renewInterval": %d`,
		ns, id, testL.Milliseconds(), testR.Milliseconds())
	in, err := start(t, params, ev, func(c *ClusterService) { c.RESTConfig = cfg })
	if err != nil {
		t.Fatal(err)
	}
	in.cut = cut
	return in
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
