package redis

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
// connection.
//
// Heartbeats (store.WithHeartbeat): while a watch asks for them, the hub sends a PING on the
// Pub/Sub connection every interval (the shortest its watches ask for). Redis answers it on
// that connection, after the messages it delivered before it, so the answer (a *Pong, read in
// order with the messages) proves that every state published before the PING has been handed
// to the watches: the hub then gives each watch that asked a heartbeat, after the states it
// holds. A connection that goes silent without failing (half-open) answers nothing, so the
// watches get no heartbeat, and their callers stop trusting them; a PING unanswered for
// pingTimeout ends the hub with an error, so that the watches are opened again, on a new
// connection. pingTimeout is longer than the interval: the heartbeats stop at once anyway, and
// a server slow to answer under load is not worth a new connection and a resubscription of
// every key.

var _ driver.Watcher = (*backend)(nil)

// watchChannel returns the Pub/Sub channel on which the writes to the Redis key rkey are
// published. The scripts build the same name ('watch:' .. KEYS[1]); on a cluster, the sharded
// channel is named as the key (cluster.go says why).
func (s *backend) watchChannel(rkey string) string {
	if s.scripts.cluster {
		return rkey
	}
	return "watch:" + rkey
}

// createSource is Create: SET NX, and the notification of the new document when it was set.
const createSource = `
if not redis.call('SET', KEYS[1], ARGV[1], 'NX') then return 0 end
redis.pcall('PUBLISH', 'watch:' .. KEYS[1], ARGV[1])
return 1
`

// syncSource publishes the key's value (empty when it has none) on its watch channel, after
// ARGV[1], a watch's tag.
const syncSource = `
local v = redis.call('GET', KEYS[1])
redis.call('PUBLISH', 'watch:' .. KEYS[1], ARGV[1] .. (v or ''))
return 1
`

// create writes doc under key unless it exists, and notifies its watches.
func (s *backend) create(ctx context.Context, key string, doc []byte) error {
	n, err := s.write(ctx, s.scripts.create, s.rkey(key), doc).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return store.ErrExists
	}
	return nil
}

// defaultPingTimeout is how long the hub waits for the answer to a heartbeat's PING before it
// counts the connection dead.
const defaultPingTimeout = 5 * time.Second

// errStoreClosed ends the watches of a closed Store, and fails its queued writes.
var errStoreClosed = errors.New("store/redis: the store was closed")

// watchState is the backend's hubs, made on demand: one, or on a cluster one per primary
// (sharded Pub/Sub delivers a channel's messages on the nodes of its slot's shard only).
type watchState struct {
	mu          sync.Mutex
	hubs        map[string]*watchHub // by primary's address ("" off a cluster); none when no watch runs
	closed      bool
	pingTimeout time.Duration // 0: defaultPingTimeout (tests set it)
}

// acquire returns the hub of node, opening one if needed, with a reference the caller
// releases.
func (ws *watchState) acquire(b *backend, node string) (*watchHub, error) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed {
		return nil, errStoreClosed
	}
	h := ws.hubs[node]
	if h == nil {
		if ws.hubs == nil {
			ws.hubs = map[string]*watchHub{}
		}
		h = newWatchHub(b, ws, node)
		ws.hubs[node] = h
	}
	h.refs++
	return h, nil
}

// release drops a reference to h, closing it with the last.
func (ws *watchState) release(h *watchHub) {
	ws.mu.Lock()
	h.refs--
	last := h.refs == 0
	if last && ws.hubs[h.node] == h {
		delete(ws.hubs, h.node)
	}
	ws.mu.Unlock()
	if last {
		h.fail(errors.New("store/redis: no watch left"))
	}
}

// close fails the hubs, and every later watch, with errStoreClosed.
func (ws *watchState) close() {
	ws.mu.Lock()
	ws.closed = true
	hubs := ws.hubs
	ws.hubs = nil
	ws.mu.Unlock()
	for _, h := range hubs {
		h.fail(errStoreClosed)
	}
}

// detach forgets h if it is still the hub, so that the next watch opens a new one.
func (ws *watchState) detach(h *watchHub) {
	ws.mu.Lock()
	if ws.hubs[h.node] == h {
		delete(ws.hubs, h.node)
	}
	ws.mu.Unlock()
}

// watchHub is one Pub/Sub connection and the watches it serves.
type watchHub struct {
	ps      *goredis.PubSub
	state   *watchState
	node    string // the primary's address on a cluster, else ""
	sharded bool   // SSUBSCRIBE, on a cluster
	reload  func() // has the cluster client read the slots again (nil off a cluster)

	checkOnce sync.Once // the node is checked to be a primary, once (checkNode)
	checkErr  error
	refs      int // under state.mu

	failOnce sync.Once
	done     chan struct{} // closed when the hub has failed
	// connected is closed once the connection may be used by read and ping: at once for a
	// plain subscription; for a sharded one, after its first SSUBSCRIBE, which connects it to
	// the primary of that channel's slot (a Receive or a PING first would connect to any node).
	connected chan struct{}
	err       error // why; set before done is closed

	mu      sync.Mutex
	chans   map[string]map[*keyWatch]struct{} // the watches of each subscribed channel
	pending map[string]int                    // SUBSCRIBEs queued or sent, not yet confirmed
	leaving map[string]int                    // SUNSUBSCRIBEs queued or sent, not yet confirmed
	queue   []subOp                           // subscriptions to change, in order
	kick    chan struct{}                     // cap 1: queue is not empty
	tokens  atomic.Uint64
	id      string // the hub's random part of its watches' tokens

	// Heartbeats. Under mu.
	beats   map[*keyWatch]time.Duration // the watches that ask for heartbeats, and how often
	pings   []time.Time                 // when each PING not yet answered was sent, oldest first
	beatNew chan struct{}               // cap 1: beats changed
	timeout time.Duration               // how long a PING may go unanswered
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
	beat   uint64 // counts the heartbeats given to the watch
}

func newWatchHub(b *backend, ws *watchState, node string) *watchHub {
	h := &watchHub{
		state:     ws,
		node:      node,
		sharded:   b.scripts.cluster,
		done:      make(chan struct{}),
		connected: make(chan struct{}),
		chans:     map[string]map[*keyWatch]struct{}{},
		pending:   map[string]int{},
		leaving:   map[string]int{},
		kick:      make(chan struct{}, 1),
		id:        rand.Text()[:12],
		beats:     map[*keyWatch]time.Duration{},
		beatNew:   make(chan struct{}, 1),
		timeout:   cmp.Or(ws.pingTimeout, defaultPingTimeout),
	}
	// No channel yet: no connection yet. A cluster client connects a sharded subscription to
	// the primary of its first channel's slot, node.
	if cc, ok := b.client.(*goredis.ClusterClient); ok {
		h.reload = func() { cc.ReloadState(context.Background()) }
	}
	if h.sharded {
		h.ps = b.client.SSubscribe(context.Background())
	} else {
		h.ps = b.client.Subscribe(context.Background())
		close(h.connected)
	}
	go h.read()
	go h.write()
	go h.ping()
	return h
}

// fail ends the hub with err (the first error wins) and closes its connection.
func (h *watchHub) fail(err error) {
	h.failOnce.Do(func() {
		if h.reload != nil {
			// The slot map may be what sent the hub to the wrong node: the next watches
			// should find the slots where they are now.
			h.reload()
		}
		h.err = err
		close(h.done)
		h.state.detach(h)
		h.ps.Close()
	})
}

// add registers a watch of channel, subscribing to it if it is the first; every > 0 asks for
// heartbeats that often.
func (h *watchHub) add(channel string, every time.Duration) *keyWatch {
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
	if every > 0 {
		h.beats[w] = every
		select {
		case h.beatNew <- struct{}{}:
		default:
		}
	}
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
	delete(h.beats, w)
	if len(ws) == 0 {
		delete(h.chans, channel)
		if h.sharded {
			h.leaving[channel]++
		}
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
			// A sharded subscription's command names channels of one slot: one each.
			for !h.sharded && n < len(ops) && ops[n].sub == ops[0].sub {
				n++
			}
			chans := make([]string, n)
			for i, op := range ops[:n] {
				chans[i] = op.channel
			}
			var err error
			switch {
			case h.sharded && ops[0].sub:
				err = h.ps.SSubscribe(context.Background(), chans...)
			case h.sharded:
				err = h.ps.SUnsubscribe(context.Background(), chans...)
			case ops[0].sub:
				err = h.ps.Subscribe(context.Background(), chans...)
			default:
				err = h.ps.Unsubscribe(context.Background(), chans...)
			}
			if err != nil {
				h.fail(fmt.Errorf("store/redis: watch subscription: %w", err))
				return
			}
			if h.sharded && ops[0].sub {
				select {
				case <-h.connected:
				default:
					close(h.connected)
				}
			}
			ops = ops[n:]
		}
	}
}

// read receives the connection's messages and hands them to the watches, until it fails.
func (h *watchHub) read() {
	select {
	case <-h.connected:
	case <-h.done:
		return
	}
	for {
		msg, err := h.ps.Receive(context.Background())
		if err != nil {
			h.fail(fmt.Errorf("store/redis: watch connection: %w", err))
			return
		}
		switch m := msg.(type) {
		case *goredis.Subscription:
			switch m.Kind {
			case "subscribe", "ssubscribe":
				h.confirmed(m.Channel)
			case "sunsubscribe":
				if err := h.left(m.Channel); err != nil {
					h.fail(err)
					return
				}
			}
		case *goredis.Message:
			h.dispatch(m.Channel, m.Payload)
		case *goredis.Pong:
			h.pong()
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

// checkNode checks, once per hub, that its node is a primary. The client's map of the slots
// lags a shard's failover: a hub opened on a demoted primary would be accepted there, and hear
// nothing of the slot's writes. A hub on a node that is not a primary fails, and the client
// reads the slots again.
func (h *watchHub) checkNode(ctx context.Context, nc *goredis.Client) error {
	if nc == nil {
		return nil
	}
	h.checkOnce.Do(func() {
		role, err := nc.Do(ctx, "ROLE").Slice()
		switch {
		case err != nil:
			h.checkErr = fmt.Errorf("store/redis: watch: ROLE of %s: %w", h.node, err)
		case len(role) == 0 || role[0] != "master":
			h.checkErr = fmt.Errorf("store/redis: watch: %s, which the client thought the primary of the slot, is not a primary (a failover under way)", h.node)
		}
		if h.checkErr != nil {
			h.fail(h.checkErr)
		}
	})
	return h.checkErr
}

// left counts the server's confirmation of a SUNSUBSCRIBE of channel. One the hub did not send
// is the server's: the channel's slot has left the node (a migration, the node made a
// replica), and the messages of its writes go elsewhere now. The hub fails, and its watches
// are opened again, on the slot's new primary.
func (h *watchHub) left(channel string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.leaving[channel] > 0 {
		if h.leaving[channel]--; h.leaving[channel] == 0 {
			delete(h.leaving, channel)
		}
		return nil
	}
	return fmt.Errorf("store/redis: watch connection: the server %s ended the subscription of channel %q: it serves the slot no more (a migration, or a failover)", h.node, channel)
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

// take returns w's newest state, its number, and the number of heartbeats given to w.
func (h *watchHub) take(w *keyWatch) (string, uint64, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return w.latest, w.seq, w.beat
}

// ping sends a PING every interval while watches ask for heartbeats (the shortest interval
// asked), and fails the hub when one has gone unanswered for h.timeout, until the hub fails.
func (h *watchHub) ping() {
	select {
	case <-h.connected:
	case <-h.done:
		return
	}
	var pace driver.Pace
	defer pace.Stop()
	for {
		h.mu.Lock()
		want := driver.Shortest(h.beats)
		var late bool
		if len(h.pings) > 0 {
			late = time.Since(h.pings[0]) > h.timeout
		}
		h.mu.Unlock()
		if late {
			h.fail(fmt.Errorf("store/redis: watch connection: no answer to a PING within %v", h.timeout))
			return
		}
		c := pace.C(want)
		select {
		case <-h.done:
			return
		case <-h.beatNew:
			continue
		case <-c:
		}
		h.mu.Lock()
		h.pings = append(h.pings, time.Now())
		h.mu.Unlock()
		// The answer comes through read, in order with the messages.
		if err := h.ps.Ping(context.Background()); err != nil {
			h.fail(fmt.Errorf("store/redis: watch connection: ping: %w", err))
			return
		}
	}
}

// pong counts the answer to the oldest PING, and gives a heartbeat to every watch that asks
// for them and has had its first state: every message published before the PING has been
// dispatched.
func (h *watchHub) pong() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.pings) == 0 {
		return // a PING of go-redis's own
	}
	h.pings = h.pings[1:]
	for w := range h.beats {
		if !w.synced {
			continue
		}
		w.beat++
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// Watch implements driver.Watcher (see the comment at the top of this file).
func (s *backend) Watch(ctx context.Context, key string, fn func(driver.Notice) error) error {
	rkey := s.rkey(key)
	node, nc, err := s.nodeFor(ctx, rkey)
	if err != nil {
		return err
	}
	h, err := s.watches.acquire(s, node)
	if err != nil {
		return err
	}
	defer s.watches.release(h)
	if err := h.checkNode(ctx, nc); err != nil {
		return err
	}
	channel := s.watchChannel(rkey)
	w := h.add(channel, store.HeartbeatEvery(ctx))
	defer h.remove(channel, w)
	select {
	case <-w.ready:
	case <-h.done:
		return h.err
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := s.sync(ctx, rkey, w.token); err != nil {
		return fmt.Errorf("store/redis: read for a watch: %w", err)
	}
	// The sync message comes back within a round trip or two. On a cluster it may never: a
	// subscription made while a shard fails over can land on a node that no longer receives
	// the slot's messages and says nothing. A watch without its first state for the PING
	// timeout ends, and is opened again where the slot is now (checkNode makes that rare).
	var first <-chan time.Time // off a cluster, a missing sync message is a failed connection
	if h.sharded {
		t := time.NewTimer(h.timeout)
		defer t.Stop()
		first = t.C
	}
	var seen, beats uint64
	for {
		select {
		case <-w.wake:
		case <-first:
			if seen == 0 {
				return fmt.Errorf("store/redis: watch of %q: no first state within %v (node %s)", rkey, h.timeout, cmp.Or(h.node, "of the store"))
			}
		case <-h.done:
			return h.err
		case <-ctx.Done():
			return ctx.Err()
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		state, seq, beat := h.take(w)
		if seq != seen {
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
		// A heartbeat after the states dispatched before it; none before the first state.
		if beat != beats && seen > 0 {
			beats = beat
			if err := fn(driver.Notice{Heartbeat: true}); err != nil {
				return err
			}
		}
	}
}
