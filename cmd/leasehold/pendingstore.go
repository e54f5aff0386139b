package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/store"
)

// A store that cannot be reached or is not ready when run starts is a follower's condition,
// not a fatal error (C7 of docs/design.md): the command keeps trying to open it, with
// openBackoff's schedule, and its election runs over a pendingStore whose calls fail until the
// store opens, so that the instance follows (never leads) until the store answers. Only an
// error waiting cannot cure (store.ErrConfig: a bad URL or parameter, a file the URL names
// that cannot be read, refused credentials, a TLS setting that cannot work) stops the start.

const (
	openBackoffMax = 4 * time.Second  // the longest wait between two attempts to open
	openLogEvery   = 30 * time.Second // a failure repeating itself is logged again after this
)

// openBackoff is the schedule of the attempts to open a store after the first failed: the
// first wait is R capped at one second, each next one twice the last, up to openBackoffMax.
type openBackoff struct{ next time.Duration }

func newOpenBackoff(r time.Duration) *openBackoff {
	return &openBackoff{next: max(min(r, time.Second), 10*time.Millisecond)}
}

// wait returns the wait before the next attempt.
func (b *openBackoff) wait() time.Duration {
	d := b.next
	b.next = min(2*b.next, openBackoffMax)
	return d
}

// errStoreNotOpen is in the errors of a pendingStore's calls before the store opens.
var errStoreNotOpen = errors.New("the store is not open yet")

// pendingStore is a store being opened in the background: its calls fail with errStoreNotOpen
// and the last error of the attempts to open it until one succeeds, then go to the store.
type pendingStore struct {
	st      atomic.Pointer[store.Store]
	lastErr atomic.Pointer[error]
	cancel  context.CancelFunc
	done    chan struct{}
	once    sync.Once
}

// openStoreWaiting opens the store of rawURL, each attempt bounded by bound: an error waiting
// cannot cure (store.NotReady false) is returned at once; another one makes a pendingStore
// that keeps trying in the background, with the back-off of R r, logging to log.
func openStoreWaiting(ctx context.Context, rawURL string, bound, r time.Duration, log *slog.Logger) (store.Store, error) {
	open := func(ctx context.Context) (store.Store, error) {
		ctx, cancel := context.WithTimeout(ctx, bound)
		defer cancel()
		return openStore(ctx, rawURL)
	}
	st, err := open(ctx)
	if err == nil {
		return st, nil
	}
	if !store.NotReady(err) || localStore(rawURL) {
		return nil, err
	}
	return newPendingStore(ctx, open, err, r, log), nil
}

// localStore reports whether rawURL names a store in this machine's files or memory (file,
// sqlite, mem): there is no server to wait for, and its errors stop the start.
func localStore(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return true
	}
	switch strings.ToLower(u.Scheme) {
	case "file", "sqlite", "mem":
		return true
	}
	return false
}

// newPendingStore returns a pendingStore whose first attempt, open's, failed with first: it
// tries again with open after the waits of openBackoff until it succeeds or the store closes.
func newPendingStore(ctx context.Context, open func(context.Context) (store.Store, error), first error, r time.Duration, log *slog.Logger) *pendingStore {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &pendingStore{cancel: cancel, done: make(chan struct{})}
	p.lastErr.Store(&first)
	log.Warn("leasehold: the store cannot be opened yet: following until it answers", "error", explain(oneLine(first.Error())))
	go p.keepOpening(ctx, open, first, newOpenBackoff(r), log)
	return p
}

func (p *pendingStore) keepOpening(ctx context.Context, open func(context.Context) (store.Store, error), first error, b *openBackoff, log *slog.Logger) {
	defer close(p.done)
	start := time.Now()
	attempts := 1
	lastMsg, lastLog, unlogged := first.Error(), start, 0
	t := time.NewTimer(b.wait())
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
		if msg := err.Error(); msg != lastMsg || time.Since(lastLog) >= openLogEvery {
			log.Warn("leasehold: the store cannot be opened yet", "error", explain(oneLine(msg)),
				"attempts", attempts, "since", time.Since(start).Round(time.Second), "unlogged", unlogged)
			lastMsg, lastLog, unlogged = msg, time.Now(), 0
		} else {
			unlogged++
		}
		t.Reset(b.wait())
	}
}

// store returns the open store, or an error wrapping errStoreNotOpen and the last failure.
func (p *pendingStore) store() (store.Store, error) {
	if st := p.st.Load(); st != nil {
		return *st, nil
	}
	return nil, fmt.Errorf("%w: %w", errStoreNotOpen, *p.lastErr.Load())
}

func (p *pendingStore) Get(ctx context.Context, key string) (map[string]any, error) {
	st, err := p.store()
	if err != nil {
		return nil, err
	}
	return st.Get(ctx, key)
}

func (p *pendingStore) Create(ctx context.Context, key string, doc map[string]any) error {
	st, err := p.store()
	if err != nil {
		return err
	}
	return st.Create(ctx, key, doc)
}

func (p *pendingStore) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	st, err := p.store()
	if err != nil {
		return err
	}
	return st.Patch(ctx, key, fields, cond)
}

func (p *pendingStore) Delete(ctx context.Context, key string, cond *store.Condition) error {
	st, err := p.store()
	if err != nil {
		return err
	}
	return st.Delete(ctx, key, cond)
}

// Watch watches the open store, if it can; before it opens it fails at once (the Elector
// polls, and watches again later).
func (p *pendingStore) Watch(ctx context.Context, key string, fn func(store.Change)) error {
	st, err := p.store()
	if err != nil {
		return err
	}
	return store.Watch(ctx, st, key, fn)
}

// Close stops the attempts to open the store and closes it if one succeeded.
func (p *pendingStore) Close() error {
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
