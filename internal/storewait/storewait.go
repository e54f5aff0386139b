// Package storewait opens a store that is not ready yet in the background, with a back-off,
// behind a store.Store whose calls fail until it opens (C7 of docs/design.md).
package storewait

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/store"
)

const (
	BackoffMax = 4 * time.Second  // the longest wait between two attempts to open
	LogEvery   = 30 * time.Second // a failure repeating itself is logged again after this
)

// Backoff is the schedule of the attempts to open a store after the first failed: the
// first wait is R capped at one second, each next one twice the last, up to BackoffMax.
type Backoff struct{ next time.Duration }

// NewBackoff returns the schedule for an election renewing every r.
func NewBackoff(r time.Duration) *Backoff {
	return &Backoff{next: max(min(r, time.Second), 10*time.Millisecond)}
}

// Wait returns the wait before the next attempt.
func (b *Backoff) Wait() time.Duration {
	d := b.next
	b.next = min(2*b.next, BackoffMax)
	return d
}

// ErrNotOpen is in the errors of a Store's calls before the store opens.
var ErrNotOpen = errors.New("the store is not open yet")

// Store is a store being opened in the background: its calls fail with ErrNotOpen
// and the last error of the attempts to open it until one succeeds, then go to the store.
type Store struct {
	st      atomic.Pointer[store.Store]
	lastErr atomic.Pointer[error]
	cancel  context.CancelFunc
	done    chan struct{}
	once    sync.Once
}

// New returns a Store whose first attempt, open's, failed with first: it tries again with open
// after the waits of NewBackoff(r) until it succeeds or the Store is closed. The first failure
// is logged at WARN, a different one at once, the same one again after LogEvery, the success
// at INFO.
func New(ctx context.Context, open func(context.Context) (store.Store, error), first error, r time.Duration, log *slog.Logger) *Store {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &Store{cancel: cancel, done: make(chan struct{})}
	p.lastErr.Store(&first)
	log.Warn("leasehold: the store cannot be opened yet: following until it answers", "error", oneLine(first.Error()))
	go p.keepOpening(ctx, open, first, NewBackoff(r), log)
	return p
}

func (p *Store) keepOpening(ctx context.Context, open func(context.Context) (store.Store, error), first error, b *Backoff, log *slog.Logger) {
	defer close(p.done)
	start := time.Now()
	attempts := 1
	lastMsg, lastLog, unlogged := first.Error(), start, 0
	t := time.NewTimer(b.Wait())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := open(ctx)
		attempts++
		if err == nil {
			if ctx.Err() != nil { // closed meanwhile
				_ = store.Close(st)
				return
			}
			p.st.Store(&st)
			log.Info("leasehold: the store answers: opened it", "attempts", attempts, "after", time.Since(start).Round(time.Millisecond))
			return
		}
		if ctx.Err() != nil {
			return
		}
		p.lastErr.Store(&err)
		// Each new failure once, then the same one again only now and then.
		if msg := err.Error(); msg != lastMsg || time.Since(lastLog) >= LogEvery {
			log.Warn("leasehold: the store cannot be opened yet", "error", oneLine(msg),
				"attempts", attempts, "since", time.Since(start).Round(time.Second), "unlogged", unlogged)
			lastMsg, lastLog, unlogged = msg, time.Now(), 0
		} else {
			unlogged++
		}
		t.Reset(b.Wait())
	}
}

// current returns the open store, or an error wrapping ErrNotOpen and the last failure.
func (p *Store) current() (store.Store, error) {
	if st := p.st.Load(); st != nil {
		return *st, nil
	}
	return nil, fmt.Errorf("%w: %w", ErrNotOpen, *p.lastErr.Load())
}

func (p *Store) Get(ctx context.Context, key string) (map[string]any, error) {
	st, err := p.current()
	if err != nil {
		return nil, err
	}
	return st.Get(ctx, key)
}

func (p *Store) Create(ctx context.Context, key string, doc map[string]any) error {
	st, err := p.current()
	if err != nil {
		return err
	}
	return st.Create(ctx, key, doc)
}

func (p *Store) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	st, err := p.current()
	if err != nil {
		return err
	}
	return st.Patch(ctx, key, fields, cond)
}

func (p *Store) Delete(ctx context.Context, key string, cond *store.Condition) error {
	st, err := p.current()
	if err != nil {
		return err
	}
	return st.Delete(ctx, key, cond)
}

// Watch watches the open store, if it can; before it opens it fails at once (the Elector
// polls, and watches again later).
func (p *Store) Watch(ctx context.Context, key string, fn func(store.Change)) error {
	st, err := p.current()
	if err != nil {
		return err
	}
	return store.Watch(ctx, st, key, fn)
}

// Close stops the attempts to open the store and closes it if one succeeded.
func (p *Store) Close() error {
	var err error
	p.once.Do(func() {
		p.cancel()
		<-p.done
		if st := p.st.Load(); st != nil {
			err = store.Close(*st)
		}
	})
	return err
}

// Opened returns the open store, nil until an attempt succeeded.
func (p *Store) Opened() store.Store {
	if st := p.st.Load(); st != nil {
		return *st
	}
	return nil
}

// LastErr returns the last attempt's error (meaningful while Opened is nil).
func (p *Store) LastErr() error { return *p.lastErr.Load() }

// oneLine joins the lines of a message.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Local reports whether scheme names a store in this machine's files or memory (file, sqlite,
// mem): there is no server to wait for, and its open errors stop the start.
func Local(scheme string) bool {
	switch strings.ToLower(scheme) {
	case "file", "sqlite", "mem":
		return true
	}
	return false
}
