package storewait

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/memory"
)

// C7 in fake time: a store that could not be opened is tried again after R capped at 1s, then
// twice the last wait each time up to openBackoffMax; its calls fail with ErrNotOpen and
// the last failure until an attempt succeeds, then go to the store. The same failure is
// logged once, a new one at once; the success is logged; Close ends the attempts.
func TestBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		var logMu sync.Mutex
		log := slog.New(slog.NewJSONHandler(lockedWriter{&logs, &logMu}, nil))
		start := time.Now()
		var mu sync.Mutex
		var at []time.Duration
		mem := memory.New()
		refused := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
		open := func(context.Context) (store.Store, error) {
			mu.Lock()
			defer mu.Unlock()
			at = append(at, time.Since(start))
			switch len(at) {
			case 1, 2, 3, 4:
				return nil, refused
			case 5:
				return nil, errors.New("i/o timeout")
			}
			return mem, nil
		}
		p := New(t.Context(), open, refused, 2*time.Second, log)
		defer p.Close()
		if _, err := p.Get(t.Context(), "k"); !errors.Is(err, ErrNotOpen) || !errors.Is(err, refused) {
			t.Fatalf("Get before the store opens: %v, want ErrNotOpen and the failure", err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		want := []time.Duration{time.Second, 3 * time.Second, 7 * time.Second, 11 * time.Second, 15 * time.Second, 19 * time.Second}
		mu.Lock()
		got := append([]time.Duration(nil), at...)
		mu.Unlock()
		if len(got) != len(want) {
			t.Fatalf("attempts at %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("attempts at %v, want %v", got, want)
			}
		}
		if err := p.Create(t.Context(), "k", map[string]any{"a": 1}); err != nil {
			t.Fatalf("Create once open: %v", err)
		}
		if doc, err := mem.Get(t.Context(), "k"); err != nil || doc["a"] == nil {
			t.Fatalf("the open store has %v, %v", doc, err)
		}
		logMu.Lock()
		out := logs.String()
		logMu.Unlock()
		if n := strings.Count(out, `"level":"WARN"`); n != 2 || strings.Count(out, "connection refused") != 1 || !strings.Contains(out, "i/o timeout") {
			t.Errorf("want 2 warnings (the refusal once, the timeout once):\n%s", out)
		}
		if !strings.Contains(out, "the store answers: opened it") || !strings.Contains(out, `"attempts":6`) {
			t.Errorf("no success logged with its attempts:\n%s", out)
		}
	})
}

// Close before the store opens ends the attempts: none is made after it.
func TestCloseStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		n := 0
		open := func(context.Context) (store.Store, error) {
			mu.Lock()
			defer mu.Unlock()
			n++
			return nil, errors.New("connection refused")
		}
		p := New(t.Context(), open, errors.New("connection refused"), time.Second, slog.New(slog.DiscardHandler))
		time.Sleep(5 * time.Second)
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		before := n
		mu.Unlock()
		time.Sleep(time.Minute)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if before == 0 || n != before {
			t.Errorf("%d attempts before Close, %d after a minute: want some, and none after", before, n)
		}
	})
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
