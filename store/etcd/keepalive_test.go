package etcd

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/connectivity"

	"github.com/leasehold/leasehold/internal/tcpproxy"
)

// TestKeepaliveConfig checks the keepalive settings a URL gives (N3): pings only while a call
// is pending, every 10s by default, never more often.
func TestKeepaliveConfig(t *testing.T) {
	t.Parallel()
	u, _ := url.Parse("etcd://127.0.0.1:2379")
	cfg, _, err := parseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.PermitWithoutStream || cfg.DialKeepAliveTime != 10*time.Second || cfg.DialKeepAliveTimeout != 3*time.Second {
		t.Errorf("default keepalive: without stream %v, every %v, timeout %v; want false, 10s, 3s",
			cfg.PermitWithoutStream, cfg.DialKeepAliveTime, cfg.DialKeepAliveTimeout)
	}
	for _, c := range []struct {
		v  string
		ok bool
	}{{"0", true}, {"10s", true}, {"1m", true}, {"5s", false}, {"1ms", false}} {
		u, _ := url.Parse("etcd://127.0.0.1:2379?keepalive=" + c.v)
		_, _, err := parseConfig(u)
		if c.ok != (err == nil) || err != nil && !strings.Contains(err.Error(), `"keepalive"`) {
			t.Errorf("keepalive=%s: %v", c.v, err)
		}
	}
}

// TestKeepaliveDeadConnection: a call on a connection that stopped carrying anything (a
// partition) fails once a keepalive ping goes unanswered, well before its own deadline, and the
// store works again once the network heals (N3).
func TestKeepaliveDeadConnection(t *testing.T) {
	p, err := tcpproxy.New(etcdAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	raw, _ := serverURL(t)
	raw = strings.Replace(raw, etcdAddr, p.Addr(), 1)
	s, err := Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p.Cut()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	start := time.Now()
	err = s.Create(ctx, "during-cut", map[string]any{"a": 1.0})
	took := time.Since(start)
	if err == nil || ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Create over a dead connection: %v after %v (context: %v); want a connection error before the deadline", err, took, ctx.Err())
	}
	t.Logf("Create over a dead connection failed after %v: %v", took.Round(time.Millisecond), err)
	if took > 10*time.Second+3*time.Second+5*time.Second {
		t.Errorf("Create failed after %v: later than keepalive + keepalive_timeout", took)
	}
	p.Heal()
	ctx2, cancel2 := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel2()
	for {
		_, err := s.Get(ctx2, "after-heal")
		if err == nil || ctx2.Err() != nil {
			t.Fatalf("Get after the heal: %v; want the key missing", err)
		}
		if strings.Contains(err.Error(), "not found") {
			break
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the gRPC goroutines that log into it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestKeepaliveIdle: an idle store keeps its connection. An etcd server closes a connection
// that pings without a call in flight more than twice in two hours (GOAWAY "too_many_pings");
// a client pinging an idle connection at gRPC's minimum period, 10s, meets that 40s after its
// last call. This test holds a store idle for 45s and checks that its connection stayed ready
// and that gRPC, whose lines go to log/slog, logged no such GOAWAY.
func TestKeepaliveIdle(t *testing.T) {
	if testing.Short() {
		t.Skip("holds a connection idle for 45s")
	}
	logs := &syncBuffer{}
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer slog.SetDefault(old)

	s := openTest(t)
	conn := s.Client().ActiveConnection()
	if st := conn.GetState(); st != connectivity.Ready {
		t.Fatalf("connection %v after Open, want READY", st)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()
	if conn.WaitForStateChange(ctx, connectivity.Ready) {
		t.Errorf("the idle connection left READY for %v", conn.GetState())
	}
	if _, err := s.Get(t.Context(), "after-idle"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("Get after the idle time: %v", err)
	}
	if out := logs.String(); strings.Contains(out, "too_many_pings") || strings.Contains(out, "ENHANCE_YOUR_CALM") {
		t.Errorf("the server sent GOAWAY too_many_pings:\n%s", out)
	}
}

// TestGRPCLogsToSlog: gRPC's log lines go to log/slog, errors at warning level, the rest at
// debug level.
func TestGRPCLogsToSlog(t *testing.T) {
	logs := &syncBuffer{}
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer slog.SetDefault(old)
	var l grpcLogger
	l.Errorf("boom %d", 1)
	l.Info("info line")
	l.Warningln("warn line")
	out := logs.String()
	for _, want := range []string{`level=WARN msg="etcd client: gRPC: boom 1"`, `level=DEBUG msg="etcd client: gRPC: info line"`, `level=DEBUG msg="etcd client: gRPC: warn line"`} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %s:\n%s", want, out)
		}
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(logs, nil)))
	if l.V(0) {
		t.Error("V(0) is true with the default logger at info level")
	}
}
