package redis

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	goredis "github.com/redis/go-redis/v9"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// Watching a key (T8 of docs/design.md) needs no server configuration (no keyspace
// notifications): every write this store makes is a script that also publishes the key's new
// state on the key's watch channel, watchChannel, in the same atomic step: the document's text
// after a Create or a Patch, an empty message after a Delete. Redis runs scripts one at a time
// and delivers a channel's messages in the order they were published, so a subscriber sees the
// states in the order written. A write made by anything but this store (a SET from redis-cli,
// a key's TTL running out) publishes nothing and is not seen.
//
// All the watches of one Store share one Pub/Sub connection (a watchHub), opened with the first
// watch and closed with the last: each watched key's channel is subscribed while at least one
// watch of it runs, and the hub hands each message to the watches of its channel.
//
// A watch's first state must be one after which it sees every write. A plain GET after the
// SUBSCRIBE would not do: the GET's answer comes on another connection, and a message
// published before the GET may arrive after it, an older state after a newer one. So once
// the server has confirmed the subscription, the watch runs syncScript, which reads the key and
// publishes what it read on the same channel, tagged with the watch's token ('#', the token, a
// newline, then the value). That message arrives in its place among the others: the watch
// ignores what comes before it, delivers it as the first state, then every message after it.
// The other watches of the key receive it too, as one more state in order (T8 allows a repeat).
//
// The hub fails, and every watch of the Store returns an error, when its connection fails (the
// server closed it, a reset) or the Store is closed: messages published meanwhile are lost, so
// the watch cannot go on as if nothing had happened; its caller watches again, on a new
// connection. A connection that goes silent without failing is not noticed here: the caller
// polls when a watch is quiet (T8: a watch is a hint).

var _ driver.Watcher = (*backend)(nil)

// watchChannel returns the Pub/Sub channel on which the writes to the Redis key rkey are
// published. The scripts build the same name ('watch:' .. KEYS[1]).
func watchChannel(rkey string) string { return "watch:" + rkey }

// createScript is Create: SET NX, and the notification of the new document when it was set.
var createScript = goredis.NewScript(`
if not redis.call('SET', KEYS[1], ARGV[1], 'NX') then return 0 end
redis.pcall('PUBLISH', 'watch:' .. KEYS[1], ARGV[1])
return 1
`)

// syncScript publishes the key's value (empty when it has none) on its watch channel, after
// ARGV[1], a watch's tag.
var syncScript = goredis.NewScript(`
local v = redis.call('GET', KEYS[1])
redis.call('PUBLISH', 'watch:' .. KEYS[1], ARGV[1] .. (v or ''))
return 1
`)

// create writes doc under key unless it exists, and notifies its watches.
func (s *backend) create(ctx context.Context, key string, doc []byte) error {
	n, err := s.write(ctx, createScript, s.prefix+key, doc).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return store.ErrExists
	}
	return nil
}

// errStoreClosed ends the watches of a closed Store, and fails its queued writes.
var errStoreClosed = errors.New("store/redis: the store was closed")

// watchState is the backend's hub, made on demand.
type watchState struct {
	mu     sync.Mutex
	hub    *watchHub // nil when no watch runs
	closed bool
}

// acquire returns the hub, opening one if needed, with a reference the caller releases.
func (ws *watchState) acquire(b *backend) (*watchHub, error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed {
		return nil, errStoreClosed
	}
	if ws.hub == nil {
		ws.hub = newWatchHub(b, ws)
	}
	ws.hub.refs++
	return ws.hub, nil
}

// release drops a reference to h, closing it with the last.
func (ws *watchState) release(h *watchHub) {
	ws.mu.Lock()
	h.refs--
	last := h.refs == 0
	if last && ws.hub == h {
		ws.hub = nil
	}
	ws.mu.Unlock()
	if last {
		h.fail(errors.New("store/redis: no watch left"))
	}
}

// close fails the hub, and every later watch, with errStoreClosed.
func (ws *watchState) close() {
	ws.mu.Lock()
	ws.closed = true
	h := ws.hub
	ws.hub = nil
	ws.mu.Unlock()
	if h != nil {
		h.fail(errStoreClosed)
	}
}

// detach forgets h if it is still the hub, so that the next watch opens a new one.
func (ws *watchState) detach(h *watchHub) {
	ws.mu.Lock()
	if ws.hub == h {
		ws.hub = nil
	}
	ws.mu.Unlock()
}

// watchHub is one Pub/Sub connection and the watches it serves.
type watchHub struct {
	ps    *goredis.PubSub
	state *watchState
	refs  int // under state.mu

	failOnce sync.Once
	done     chan struct{} // closed when the hub has failed
	err      error         // why; set before done is closed

	mu      sync.Mutex
	chans   map[string]map[*keyWatch]struct{} // the watches of each subscribed channel
	pending map[string]int                    // SUBSCRIBEs queued or sent, not yet confirmed
	queue   []subOp                           // subscriptions to change, in order
	kick    chan struct{}                     // cap 1: queue is not empty
	tokens  atomic.Uint64
	id      string // the hub's random part of its watches' tokens
}

// subOp is a SUBSCRIBE (sub) or an UNSUBSCRIBE of a channel.
type subOp struct {
	channel string
	sub     bool
}

// keyWatch is one Watch call's share of the hub. Its fields are under the hub's mu.
type keyWatch struct {
	token  string
	ready  chan struct{} // closed once the server has confirmed the channel's subscription
	wake   chan struct{} // cap 1: latest changed
	isRdy  bool
	synced bool   // the watch's own sync message has come
	latest string // the newest state since then: a document's text, or "" (no document)
	seq    uint64 // counts the states put in latest
}

func newWatchHub(b *backend, ws *watchState) *watchHub {
	h := &watchHub{
		ps:      b.client.Subscribe(context.Background()), // no channel yet: no connection yet
		state:   ws,
		done:    make(chan struct{}),
		chans:   map[string]map[*keyWatch]struct{}{},
		pending: map[string]int{},
		kick:    make(chan struct{}, 1),
		id:      rand.Text()[:12],
	}
	go h.read()
	go h.write()
	return h
}

// fail ends the hub with err (the first error wins) and closes its connection.
func (h *watchHub) fail(err error) {
	h.failOnce.Do(func() {
		h.err = err
		close(h.done)
		h.state.detach(h)
		h.ps.Close()
	})
}

// add registers a watch of channel, subscribing to it if it is the first.
func (h *watchHub) add(channel string) *keyWatch {
	w := &keyWatch{
		token: "#" + h.id + "-" + strconv.FormatUint(h.tokens.Add(1), 10) + "\n",
		ready: make(chan struct{}),
		wake:  make(chan struct{}, 1),
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	ws, ok := h.chans[channel]
	if !ok {
		ws = map[*keyWatch]struct{}{}
		h.chans[channel] = ws
		h.pending[channel]++
		h.enqueue(subOp{channel, true})
	}
	ws[w] = struct{}{}
	if h.pending[channel] == 0 {
		w.isRdy = true
		close(w.ready)
	}
	return w
}

// remove unregisters w, unsubscribing from channel if it was the last.
func (h *watchHub) remove(channel string, w *keyWatch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ws := h.chans[channel]
	delete(ws, w)
	if len(ws) == 0 {
		delete(h.chans, channel)
		h.enqueue(subOp{channel, false})
	}
}

// enqueue queues op for the writer. h.mu is held.
func (h *watchHub) enqueue(op subOp) {
	h.queue = append(h.queue, op)
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// write sends the queued subscription changes, in order, consecutive ones of a kind in one
// command, until the hub fails.
func (h *watchHub) write() {
	for {
		select {
		case <-h.kick:
		case <-h.done:
			return
		}
		h.mu.Lock()
		ops := h.queue
		h.queue = nil
		h.mu.Unlock()
		for len(ops) > 0 {
			n := 1
			for n < len(ops) && ops[n].sub == ops[0].sub {
				n++
			}
			chans := make([]string, n)
			for i, op := range ops[:n] {
				chans[i] = op.channel
			}
			var err error
			if ops[0].sub {
				err = h.ps.Subscribe(context.Background(), chans...)
			} else {
				err = h.ps.Unsubscribe(context.Background(), chans...)
			}
			if err != nil {
				h.fail(fmt.Errorf("store/redis: watch subscription: %w", err))
				return
			}
			ops = ops[n:]
		}
	}
}

// read receives the connection's messages and hands them to the watches, until it fails.
func (h *watchHub) read() {
	for {
		msg, err := h.ps.Receive(context.Background())
		if err != nil {
			h.fail(fmt.Errorf("store/redis: watch connection: %w", err))
			return
		}
		switch m := msg.(type) {
		case *goredis.Subscription:
			if m.Kind == "subscribe" {
				h.confirmed(m.Channel)
			}
		case *goredis.Message:
			h.dispatch(m.Channel, m.Payload)
		}
	}
}

// confirmed counts the server's confirmation of a SUBSCRIBE to channel; once every SUBSCRIBE
// sent for it is confirmed, its watches are ready.
func (h *watchHub) confirmed(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pending[channel] == 0 {
		return
	}
	h.pending[channel]--
	if h.pending[channel] > 0 {
		return
	}
	delete(h.pending, channel)
	for w := range h.chans[channel] {
		if !w.isRdy {
			w.isRdy = true
			close(w.ready)
		}
	}
}

// dispatch hands a message of channel to its watches: to each, a write's state once its own
// sync message came, and its sync message itself.
func (h *watchHub) dispatch(channel, payload string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	state, tag := payload, ""
	if strings.HasPrefix(payload, "#") {
		i := strings.IndexByte(payload, '\n')
		if i < 0 {
			return // not a sync message of this package
		}
		tag, state = payload[:i+1], payload[i+1:]
	}
	for w := range h.chans[channel] {
		if !w.synced {
			if tag == "" || tag != w.token {
				continue // published before the watch's first state
			}
			w.synced = true
		}
		w.latest = state
		w.seq++
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// take returns w's newest state and its number.
func (h *watchHub) take(w *keyWatch) (string, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return w.latest, w.seq
}

// Watch implements driver.Watcher (see the comment at the top of this file).
func (s *backend) Watch(ctx context.Context, key string, fn func(driver.Notice) error) error {
	h, err := s.watches.acquire(s)
	if err != nil {
		return err
	}
	defer s.watches.release(h)
	rkey := s.prefix + key
	channel := watchChannel(rkey)
	w := h.add(channel)
	defer h.remove(channel, w)
	select {
	case <-w.ready:
	case <-h.done:
		return h.err
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := syncScript.Run(ctx, s.client, []string{rkey}, w.token).Err(); err != nil {
		return fmt.Errorf("store/redis: read for a watch: %w", err)
	}
	var seen uint64
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
		state, seq := h.take(w)
		if seq == seen {
			continue
		}
		seen = seq
		n := driver.Notice{}
		if state != "" {
			doc, err := decode([]byte(state))
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
