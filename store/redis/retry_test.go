package redis

import (
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/tcpproxy"
	"github.com/leasehold/leasehold/internal/testurl"
	"github.com/leasehold/leasehold/store"
)

// TestWriteNotRetried: a conditional write whose connection breaks after the server ran it
// and before its answer arrived has an unknown outcome (T7). A client that sent it again on a
// new connection would get "the condition failed" from its own first run, a definite answer
// that is false: the write took effect.
func TestWriteNotRetried(t *testing.T) {
	t.Parallel()
	raw, prefix := serverURL(t)
	direct := openCleaned(t, raw, prefix)
	p, err := tcpproxy.New(testurl.Parse(t, raw).Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	s, err := Open(t.Context(), testurl.Host(t, raw, p.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := direct.Create(t.Context(), "k", map[string]any{"rev": 1}); err != nil {
		t.Fatal(err)
	}

	// The answer comes 2d after the server ran the write: time to see it ran, and to break the
	// connection before the answer is forwarded.
	p.Latency(500 * time.Millisecond)
	res := make(chan error, 1)
	go func() {
		res <- s.Patch(t.Context(), "k", map[string]any{"rev": 2}, &store.Condition{Field: "rev", Value: 1})
	}()
	for {
		doc, err := direct.Get(t.Context(), "k")
		if err != nil {
			t.Fatal(err)
		}
		if doc["rev"] == float64(2) {
			break
		}
		select {
		case err := <-res:
			t.Fatalf("the write returned %v before the server ran it", err)
		case <-time.After(5 * time.Millisecond): // polling another connection: no event to wait for
		}
	}
	p.Latency(0)
	p.Reset()
	err = <-res
	if err == nil {
		t.Fatal("the write's connection was reset before its answer, yet it reported success")
	}
	if errors.Is(err, store.ErrConditionFailed) {
		t.Fatalf("the write ran, then its connection was reset: %v; want an unknown outcome, not a failed condition", err)
	}
}
