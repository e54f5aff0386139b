package nats

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/tcpproxy"
	"github.com/leasehold/leasehold/store"
)

// TestCreateAfterDeleteCutShort: a Create of a deleted key whose deadline passes while it reads
// the delete marker (its first write conflicts on the marker) is an unknown outcome, never
// ErrExists for a key that does not exist (T7). nats.go's KV Create answered ErrExists there:
// with one client and 50µs-1ms deadlines, one Create in six after a delete did. The proxy holds
// the read of the marker until the deadline has passed, so the cut falls there every time.
func TestCreateAfterDeleteCutShort(t *testing.T) {
	t.Parallel()
	raw, bucket := serverURL(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tcpproxy.New(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	u.Host = p.Addr()
	s, err := Open(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p.Inspect(nil)
		if err := s.JetStream().DeleteKeyValue(ctx, bucket); err != nil {
			t.Errorf("deleting bucket %s: %v", bucket, err)
		}
		s.Close()
	})
	if err := s.Create(t.Context(), "k", map[string]any{"v": 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(t.Context(), "k", nil); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	returned := make(chan struct{})
	var (
		mu   sync.Mutex
		held bool
	)
	p.Inspect(func(_ int, b []byte) {
		// The read of a key's last message, direct or through the stream API.
		if !bytes.Contains(b, []byte("DIRECT.GET")) && !bytes.Contains(b, []byte("STREAM.MSG.GET")) {
			return
		}
		mu.Lock()
		first := !held
		held = true
		mu.Unlock()
		if first {
			<-ctx.Done()
			select {
			case <-returned:
			case <-time.After(10 * time.Second):
			}
		}
	})
	err = s.Create(ctx, "k", map[string]any{"v": 2})
	close(returned)
	p.Inspect(nil)
	mu.Lock()
	wasHeld := held
	mu.Unlock()
	if !wasHeld {
		t.Fatalf("Create did not read the key after its first write (%v): the test holds nothing", err)
	}
	if errors.Is(err, store.ErrExists) {
		t.Fatalf("Create of a deleted key cut short by its deadline answered ErrExists: %v", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Create cut short by its deadline: %v, want an error wrapping context.DeadlineExceeded", err)
	}
	if _, err := s.Get(t.Context(), "k"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get after the cut Create: %v, want ErrNotFound (its only write conflicted)", err)
	}
	if err := s.Create(t.Context(), "k", map[string]any{"v": 3}); err != nil {
		t.Errorf("Create of the deleted key: %v", err)
	}
	if err := s.Create(t.Context(), "k", map[string]any{"v": 4}); !errors.Is(err, store.ErrExists) {
		t.Errorf("Create of an existing key: %v, want ErrExists", err)
	}
}
