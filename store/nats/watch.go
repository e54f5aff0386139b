package nats

import (
	"context"
	"errors"
	"fmt"
	"sync"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/leasehold/leasehold/store/driver"
)

// Watching a key (T8 of docs/design.md) reads the bucket's stream through a JetStream
// consumer.
//
// One consumer per Store, not one per watched key: nats.go's key watcher is an ordered push
// consumer, each with its state on the server, its own subscription and heartbeats, and a
// process holding 10,000 leases would run 10,000 of them, each created by a round trip. Here
// the first watch starts one ordered consumer over the whole bucket (every key, updates only:
// no initial values), and a watchHub hands each entry to the watches of its key; the last
// watch to end stops it. The price is that a process watching a few keys of a busy bucket
// receives the other keys' writes too: a bucket of leases is written at each lease's renew
// interval, little beside what a holder of many leases watches anyway.
//
// A watch joins the hub, then reads the key's last message (a document, a delete or purge
// marker, or none) and its revision, and delivers that as its first state: the consumer was
// running before the read, so every write after it arrives through the consumer. The entries
// the consumer delivers are in the stream's order; those at or below the revision delivered
// last are dropped, so a state older than the read is never delivered after it.
//
// The hub fails, and every watch of the Store returns an error, when the connection is lost
// (nats.go reports it disconnected or closed, the Store's Close included) or the consumer's
// subscription ends: what was written meanwhile may be missed, so the caller watches again
// rather than trust a watch with a hole in it. A connection that goes silent without being
// noticed is the caller's to deal with (it polls when a watch is quiet).

var _ driver.Watcher = (*backend)(nil)

// watchState is the backend's hub, made on demand.
type watchState struct {
	mu  sync.Mutex
	hub *watchHub
}

// watchHub is the bucket's consumer and the watches it serves.
type watchHub struct {
	state  *watchState
	refs   int // under state.mu
	kw     jetstream.KeyWatcher
	conn   *natsgo.Conn
	status chan natsgo.Status

	failOnce sync.Once
	done     chan struct{} // closed when the hub has failed
	err      error         // why; set before done is closed

	mu   sync.Mutex
	keys map[string]map[*keyWatch]struct{} // by encoded key
}

// keyWatch is one Watch call's share of the hub; latest is under the hub's mu.
type keyWatch struct {
	wake   chan struct{} // cap 1: latest changed
	latest jetstream.KeyValueEntry
}

// acquire returns the hub, starting its consumer if needed, with a reference the caller
// releases.
func (ws *watchState) acquire(ctx context.Context, s *backend) (*watchHub, error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.hub == nil {
		h, err := startWatchHub(ctx, s, ws)
		if err != nil {
			return nil, err
		}
		ws.hub = h
	}
	ws.hub.refs++
	return ws.hub, nil
}

// release drops a reference to h, stopping it with the last.
func (ws *watchState) release(h *watchHub) {
	ws.mu.Lock()
	h.refs--
	last := h.refs == 0
	if last && ws.hub == h {
		ws.hub = nil
	}
	ws.mu.Unlock()
	if last {
		h.fail(errors.New("store/nats: no watch left"))
	}
}

func (ws *watchState) detach(h *watchHub) {
	ws.mu.Lock()
	if ws.hub == h {
		ws.hub = nil
	}
	ws.mu.Unlock()
}

func startWatchHub(ctx context.Context, s *backend, ws *watchState) (*watchHub, error) {
	h := &watchHub{
		state: ws,
		conn:  s.conn,
		done:  make(chan struct{}),
		keys:  map[string]map[*keyWatch]struct{}{},
	}
	// Listen first, then check: a loss between the two is not missed.
	h.status = s.conn.StatusChanged(natsgo.DISCONNECTED, natsgo.RECONNECTING, natsgo.CLOSED)
	if st := s.conn.Status(); st != natsgo.CONNECTED {
		s.conn.RemoveStatusListener(h.status)
		return nil, fmt.Errorf("store/nats: watch: the connection is %v", st)
	}
	kw, err := s.kv.WatchAll(ctx, jetstream.UpdatesOnly())
	if err != nil {
		s.conn.RemoveStatusListener(h.status)
		return nil, connErr(fmt.Errorf("store/nats: watch consumer: %w", err))
	}
	h.kw = kw
	go h.run()
	return h, nil
}

// fail ends the hub with err (the first error wins) and stops its consumer.
func (h *watchHub) fail(err error) {
	h.failOnce.Do(func() {
		h.err = err
		close(h.done)
		h.state.detach(h)
		h.kw.Stop()
		h.conn.RemoveStatusListener(h.status)
	})
}

// run hands the consumer's entries to the watches of their keys until the hub fails.
func (h *watchHub) run() {
	updates := h.kw.Updates()
	for {
		select {
		case e, ok := <-updates:
			if !ok {
				h.fail(errors.New("store/nats: the watch's subscription ended"))
				return
			}
			if e != nil {
				h.dispatch(e)
			}
		case st := <-h.status:
			h.fail(fmt.Errorf("store/nats: watch: the connection is %v", st))
			return
		case <-h.done:
			return
		}
	}
}

func (h *watchHub) dispatch(e jetstream.KeyValueEntry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.keys[e.Key()] {
		if w.latest == nil || e.Revision() > w.latest.Revision() {
			w.latest = e
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
}

func (h *watchHub) add(k string) *keyWatch {
	w := &keyWatch{wake: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.keys[k] == nil {
		h.keys[k] = map[*keyWatch]struct{}{}
	}
	h.keys[k][w] = struct{}{}
	return w
}

func (h *watchHub) remove(k string, w *keyWatch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.keys[k], w)
	if len(h.keys[k]) == 0 {
		delete(h.keys, k)
	}
}

func (h *watchHub) take(w *keyWatch) jetstream.KeyValueEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return w.latest
}

// Watch implements driver.Watcher (see the comment at the top of this file).
func (s *backend) Watch(ctx context.Context, key string, fn func(driver.Notice) error) error {
	ws := &s.watches
	h, err := ws.acquire(ctx, s)
	if err != nil {
		return err
	}
	defer ws.release(h)
	k := EncodeKey(key)
	w := h.add(k)
	defer h.remove(k, w)

	// The first state: the key's last message, whatever it is, and its revision.
	var rev uint64
	n := driver.Notice{}
	m, err := s.stream.GetLastMsgForSubject(ctx, "$KV."+s.kv.Bucket()+"."+k)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
	case err != nil:
		return connErr(fmt.Errorf("store/nats: read for a watch: %w", err))
	default:
		rev = m.Sequence
		if !deleted(m.Header) {
			doc, err := decode(m.Data)
			if err != nil {
				return err
			}
			n = driver.Notice{Found: true, Doc: doc}
		}
	}
	if err := fn(n); err != nil {
		return err
	}
	for {
		select {
		case <-w.wake:
		case <-h.done:
			return h.err
		case <-ctx.Done():
			return ctx.Err()
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		e := h.take(w)
		if e == nil || e.Revision() <= rev {
			continue
		}
		rev = e.Revision()
		n := driver.Notice{}
		if e.Operation() == jetstream.KeyValuePut {
			doc, err := decode(e.Value())
			if err != nil {
				return err
			}
			n = driver.Notice{Found: true, Doc: doc}
		}
		if err := fn(n); err != nil {
			return err
		}
	}
}
