package nats

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/leasehold/leasehold/store"
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
// rather than trust a watch with a hole in it.
//
// The consumer is started by a goroutine of the store's own (startHub), with the store's
// context, never under the lock the watches share and never with one watch's context: a watch
// waits for it with its own context, and returns at once with that context's error when it
// ends; one lease's watch never holds up another's, nor a Stop waiting for it.
//
// Heartbeats (store.WithHeartbeat): while a watch asks for them, the hub flushes the connection
// every interval (the shortest asked): a PING that the server answers with a PONG on the same
// connection, after every message it sent before it, which the client has then read. Then it
// asks the stream's leader for the stream's last sequence, and gives each watch that asked a
// heartbeat once the consumer has handed over the entries up to it. The PONG alone proves the
// connection, not the consumer: an ordered consumer has one replica, on any server of a
// cluster, and when that server dies or stalls the consumer goes silent while the connection
// to another server answers every PING (after a server of three was killed and started again,
// a watch brought nothing for 20 s while its heartbeats went on, and a follower that trusted
// them learned the leader's renewals only from its own reads, once per L). A consumer behind
// the stream for longer than pingTimeout ends the hub with an error, so that the watches are
// opened again on a new consumer; a stream that does not answer gives no heartbeat that time.
// The ordered consumer's own idle heartbeats would prove less (the consumer's server alive,
// not caught up), and the KeyWatcher does not show them. (nats.go passes the entries it has
// read to the consumer on a goroutine of its own: an entry read just before the PONG may reach
// the watch just after the heartbeat, an in-process delay, never a loss.) A connection that
// goes silent without failing answers no PING: the heartbeats stop, and a flush unanswered
// within pingTimeout ends the hub with an error, so that the watches are opened again.

var _ driver.Watcher = (*backend)(nil)

// defaultPingTimeout is how long the hub waits for the answer to a heartbeat's flush before it
// counts the connection dead.
const defaultPingTimeout = 5 * time.Second

// errStoreClosed ends the watches of a closed store.
var errStoreClosed = errors.New("store/nats: the store was closed")

// watchState is the backend's hub, made on demand.
type watchState struct {
	mu          sync.Mutex
	hub         *watchHub
	starting    *starting // the start of a hub in progress, nil when there is none
	closed      bool
	ctx         context.Context // the store's, made with the first hub: close cancels it
	cancel      context.CancelFunc
	wg          sync.WaitGroup // the starting goroutine
	pingTimeout time.Duration  // 0: defaultPingTimeout (tests set it)
}

// starting is one start of the hub, which watches wait for.
type starting struct {
	done    chan struct{} // closed once it is over: err is set, and the hub in place
	err     error
	waiters int // under watchState.mu
}

// watchHub is the bucket's consumer and the watches it serves.
type watchHub struct {
	state  *watchState
	refs   int // under state.mu
	kw     jetstream.KeyWatcher
	conn   *natsgo.Conn
	stream jetstream.Stream // the bucket's, the hub's own: its leader tells the last sequence (ping)
	status chan natsgo.Status
	// base is the stream's last sequence once the consumer was made: the entries up to it are
	// not the consumer's to hand over. delivered is the last sequence it handed over. Both are
	// run's once it started.
	base, delivered uint64

	failOnce sync.Once
	done     chan struct{} // closed when the hub has failed
	err      error         // why; set before done is closed

	mu      sync.Mutex
	keys    map[string]map[*keyWatch]struct{} // by encoded key
	beats   map[*keyWatch]time.Duration       // the watches asking for heartbeats, how often
	beatNew chan struct{}                     // cap 1: beats changed
	beatc   chan uint64                       // a flush was answered: the stream's last sequence then
	timeout time.Duration
}

// keyWatch is one Watch call's share of the hub; latest and beat are under the hub's mu.
type keyWatch struct {
	wake   chan struct{} // cap 1: latest or beat changed
	latest jetstream.KeyValueEntry
	beat   uint64 // heartbeats given to the watch
}

// acquire returns the hub, with a reference the caller releases. When there is none, a
// goroutine of the store's own starts one, and acquire waits for it at most until ctx ends.
func (ws *watchState) acquire(ctx context.Context, s *backend) (*watchHub, error) {
	for {
		ws.mu.Lock()
		if ws.closed {
			ws.mu.Unlock()
			return nil, errStoreClosed
		}
		if ws.hub != nil {
			ws.hub.refs++
			h := ws.hub
			ws.mu.Unlock()
			return h, nil
		}
		st := ws.starting
		if st == nil {
			if ws.ctx == nil {
				ws.ctx, ws.cancel = context.WithCancel(context.Background())
			}
			st = &starting{done: make(chan struct{})}
			ws.starting = st
			ws.wg.Add(1)
			go ws.startHub(s, st)
		}
		st.waiters++
		ws.mu.Unlock()
		select {
		case <-st.done:
			ws.mu.Lock()
			st.waiters--
			ws.mu.Unlock()
			if st.err != nil {
				return nil, st.err
			}
		case <-ctx.Done():
			ws.mu.Lock()
			st.waiters--
			var idle *watchHub
			if h := ws.hub; h != nil && h.refs == 0 && ws.starting == nil {
				idle, ws.hub = h, nil
			}
			ws.mu.Unlock()
			if idle != nil {
				idle.fail(errors.New("store/nats: no watch left"))
			}
			return nil, ctx.Err()
		}
	}
}

// startHub starts the hub for the watches waiting for it, with the store's context.
func (ws *watchState) startHub(s *backend, st *starting) {
	defer ws.wg.Done()
	// The consumer lives as long as the context its watch was made with: the store's. nats.go
	// bounds the request that creates it (JetStream's request timeout, 5s by default).
	h, err := startWatchHub(ws.ctx, s, ws)
	ws.mu.Lock()
	ws.starting = nil
	var drop *watchHub
	switch {
	case err != nil:
	case ws.closed:
		err, drop = errStoreClosed, h
	case st.waiters == 0:
		drop = h // every watch that waited gave up
	default:
		ws.hub = h
	}
	st.err = err
	close(st.done)
	ws.mu.Unlock()
	if drop != nil {
		drop.fail(errors.New("store/nats: no watch left"))
	}
}

// close ends a start of the hub, and every later watch, and waits for the starting goroutine;
// the store's Close calls it once the connection is closed (which fails the hub).
func (ws *watchState) close() {
	ws.mu.Lock()
	ws.closed = true
	if ws.cancel != nil {
		ws.cancel()
	}
	ws.mu.Unlock()
	ws.wg.Wait()
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
		state:   ws,
		conn:    s.conn,
		done:    make(chan struct{}),
		keys:    map[string]map[*keyWatch]struct{}{},
		beats:   map[*keyWatch]time.Duration{},
		beatNew: make(chan struct{}, 1),
		beatc:   make(chan uint64),
		timeout: cmp.Or(ws.pingTimeout, defaultPingTimeout),
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
	// A Stream of the hub's own: nats.go's Stream.Info keeps the answer in the Stream without a
	// lock, so the ping goroutine of a hub that is failing and the start of the next one must not
	// share one (that was a data race, found by the race detector in a fault campaign's worker).
	ictx, cancel := context.WithTimeout(ctx, h.timeout)
	stream, err := s.js.Stream(ictx, s.streamName)
	cancel()
	if err != nil {
		kw.Stop()
		s.conn.RemoveStatusListener(h.status)
		return nil, connErr(fmt.Errorf("store/nats: watch: the stream's last sequence: %w", err))
	}
	h.stream = stream
	h.base = stream.CachedInfo().State.LastSeq
	go h.run()
	go h.ping()
	return h, nil
}

// fail ends the hub with err (the first error wins) and stops its consumer. Only the first
// call stops it: the others return at once, since stopping the consumer over a silent
// connection waits for a request's timeout, which a watch ending meanwhile must not.
func (h *watchHub) fail(err error) {
	first := false
	h.failOnce.Do(func() {
		h.err = err
		h.state.detach(h)
		close(h.done)
		first = true
	})
	if !first {
		return
	}
	h.kw.Stop()
	h.conn.RemoveStatusListener(h.status)
}

// run hands the consumer's entries to the watches of their keys until the hub fails.
func (h *watchHub) run() {
	updates := h.kw.Updates()
	// take dispatches an entry received, or fails the hub when the consumer ended (false).
	take := func(e jetstream.KeyValueEntry, ok bool) bool {
		if !ok {
			h.fail(errors.New("store/nats: the watch's subscription ended"))
			return false
		}
		if e != nil {
			h.delivered = max(h.delivered, e.Revision())
			h.dispatch(e)
		}
		return true
	}
	// A heartbeat waits (waiting) for the consumer to hand over the entries up to due, the
	// stream's last when the flush was answered; behind is since when it has been short of it.
	var (
		waiting bool
		due     uint64
		behind  time.Time
	)
	caughtUp := func() bool {
		if !waiting || due > h.base && h.delivered < due {
			return false
		}
		waiting, behind = false, time.Time{}
		h.heartbeat()
		return true
	}
	for {
		select {
		case e, ok := <-updates:
			if !take(e, ok) {
				return
			}
			caughtUp()
		case last := <-h.beatc:
			// The entries received before the flush's answer first, then the heartbeat, once
			// the consumer has handed over the stream's last entry.
			for drained := false; !drained; {
				select {
				case e, ok := <-updates:
					if !take(e, ok) {
						return
					}
				default:
					drained = true
				}
			}
			waiting, due = true, last
			if caughtUp() {
				break
			}
			if behind.IsZero() {
				behind = time.Now()
			} else if time.Since(behind) > h.timeout {
				h.fail(fmt.Errorf("store/nats: watch: the consumer has been behind the stream for %v (it handed over sequence %d, the stream is at %d)",
					h.timeout, h.delivered, last))
				return
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

// ping flushes the connection every interval while watches ask for heartbeats (the shortest
// interval asked), and hands each answer to run; a flush unanswered within h.timeout fails the
// hub. It returns when the hub fails.
func (h *watchHub) ping() {
	var pace driver.Pace
	defer pace.Stop()
	for {
		h.mu.Lock()
		c := pace.C(driver.Shortest(h.beats))
		h.mu.Unlock()
		select {
		case <-h.done:
			return
		case <-h.beatNew:
			continue
		case <-c:
		}
		if err := h.conn.FlushTimeout(h.timeout); err != nil {
			h.fail(fmt.Errorf("store/nats: watch: no answer to a flush of the connection within %v: %w", h.timeout, err))
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
		info, err := h.stream.Info(ctx)
		cancel()
		if err != nil {
			continue // no heartbeat this time: the stream may have no leader for a moment
		}
		select {
		case h.beatc <- info.State.LastSeq:
		case <-h.done:
			return
		}
	}
}

// heartbeat gives a heartbeat to the watches that ask for them.
func (h *watchHub) heartbeat() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.beats {
		w.beat++
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// add registers a watch of the encoded key k; every > 0 asks for heartbeats that often.
func (h *watchHub) add(k string, every time.Duration) *keyWatch {
	w := &keyWatch{wake: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if every > 0 {
		h.beats[w] = every
		select {
		case h.beatNew <- struct{}{}:
		default:
		}
	}
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
	delete(h.beats, w)
	if len(h.keys[k]) == 0 {
		delete(h.keys, k)
	}
}

func (h *watchHub) take(w *keyWatch) (jetstream.KeyValueEntry, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return w.latest, w.beat
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
	w := h.add(k, store.HeartbeatEvery(ctx))
	defer h.remove(k, w)

	// The first state: the key's last message, whatever it is, and its revision.
	var rev uint64
	n := driver.Notice{}
	m, err := s.lastFor(ctx, k)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
	case err != nil:
		return connErr(fmt.Errorf("store/nats: read for a watch: %w", err))
	default:
		rev = m.seq
		if !deleted(m.header) {
			doc, err := decode(m.data)
			if err != nil {
				return err
			}
			n = driver.Notice{Found: true, Doc: doc}
		}
	}
	if err := fn(n); err != nil {
		return err
	}
	var beats uint64
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
		e, beat := h.take(w)
		if e != nil && e.Revision() > rev {
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
		if beat != beats { // after the entries dispatched before it
			beats = beat
			if err := fn(driver.Notice{Heartbeat: true}); err != nil {
				return err
			}
		}
	}
}
