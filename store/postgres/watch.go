package postgres

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// Watching (T8) is LISTEN/NOTIFY. Every write is one statement that also sends a notification
// on the table's channel: a CTE whose write RETURNs the row, then SELECT pg_notify(...) FROM it.
// The notification exists exactly when the write commits, and PostgreSQL delivers the
// notifications of different transactions in the order they committed, so the writes of one
// key arrive in the order they were made. The payload is JSON: {"k": key, "d": document} after a
// Create or a Patch, {"k": key} after a Delete, {"k": key, "s": 1} when the document would not
// fit in a payload (8000 bytes), {"h": md5 of the key, "s": 1} when even the key would not.
//
// One connection per store LISTENs, for all its watches, which it serves by key. A watch's
// first state is a read that sends a marker notification in the same statement: the writes
// whose notifications come after the marker committed after the read, and so are newer than
// what it read; of those before the marker, the last one (when there is one) is the newest
// state of all. So a watch delivers, at its start and after each signal-only notification,
// the read or the last notification before its marker, then the states the notifications
// carry.
//
// The listening connection is dialled by a goroutine of the store's own (dial), with the
// store's context, never under the lock the watches share and never with one watch's context:
// a watch waits for the dial with its own context, and returns at once with that context's
// error when it ends, whatever the dial does; one lease's watch never holds up another's, nor a
// Stop waiting for it. The store's Close ends the dial and waits for its goroutine.
//
// Heartbeats (store.WithHeartbeat): the listener makes a round trip on the listening
// connection (an empty query) every interval: the shortest its watches ask for, else
// listenCheck. The answer comes on that connection after every notification the server sent
// before it, and the listener dispatches those first, so a heartbeat given to the watches after
// the answer means that every write committed before the query was sent has been delivered.
// A connection that goes silent without failing answers nothing: the heartbeats stop, and a
// round trip unanswered within listenCheck ends the watches with an error, so that their
// callers watch again on a new connection.

// notifyParam is the URL parameter that turns notifications off.
const notifyParam = "notify"

// takeNotify removes the notify parameter from u's query: true (the default) or false.
func takeNotify(u *url.URL) (*url.URL, bool, error) {
	q := u.Query()
	if !q.Has(notifyParam) {
		return u, true, nil
	}
	v := q.Get(notifyParam)
	q.Del(notifyParam)
	on, err := strconv.ParseBool(v)
	if err != nil {
		return nil, false, fmt.Errorf("parameter %s: %q is not true or false", notifyParam, v)
	}
	c := *u
	c.RawQuery = q.Encode()
	return &c, on, nil
}

// defaultListenCheck is the heartbeat of the listening connection when no watch asks for a
// shorter one: it pings the server that often, and a ping without an answer within as long ends
// the store's watches. It also bounds the LISTEN of a new listening connection.
const defaultListenCheck = 5 * time.Second

// setupNotify names the table's channel and adds the notifications to the write statements.
// The channel is a digest of the table's name, within PostgreSQL's 63 bytes; tables of that name
// in other schemas share it, and their notifications carry their table's OID (tableoid), by
// which the listener tells them apart.
func (s *backend) setupNotify() {
	sum := sha256.Sum256([]byte(s.table))
	s.channel = "leasehold_" + hex.EncodeToString(sum[:16])
	s.listenCheck = defaultListenCheck
	s.watch.ctx, s.watch.cancel = context.WithCancel(context.Background())
	s.q.addNotify(s.table, s.channel)
}

// addNotify makes the write statements send their notification.
func (q *queries) addNotify(table, channel string) {
	ch := "'" + channel + "'" // letters, digits and underscores only
	// The payloads, from the shortest state that fits: PostgreSQL refuses a payload of 8000
	// bytes or more, which would fail the write.
	notify := func(full string) string {
		return ` SELECT pg_notify(` + ch + `, CASE WHEN octet_length(p.full) < 8000 THEN p.full WHEN octet_length(p.sig) < 8000 THEN p.sig ELSE p.hash END)` +
			` FROM w, LATERAL (SELECT ` + full + ` AS full, json_build_object('t', w.tableoid::bigint, 'k', w.id, 's', 1)::text AS sig, json_build_object('t', w.tableoid::bigint, 'h', md5(w.id), 's', 1)::text AS hash) p`
	}
	written := notify(`json_build_object('t', w.tableoid::bigint, 'k', w.id, 'd', w.doc)::text`)
	deleted := notify(`json_build_object('t', w.tableoid::bigint, 'k', w.id)::text`)
	q.create = `WITH w AS (` + q.create + ` RETURNING tableoid, id, doc)` + written
	q.patch = `WITH w AS (` + q.patch + ` RETURNING tableoid, id, doc)` + written
	q.patchIf = `WITH w AS (` + q.patchIf + ` RETURNING tableoid, id, doc)` + written
	q.del = `WITH w AS (` + q.del + ` RETURNING tableoid, id)` + deleted
	q.delIf = `WITH w AS (` + q.delIf + ` RETURNING tableoid, id)` + deleted
	t := pgx.Identifier{table}.Sanitize()
	q.mark = `WITH n AS (SELECT pg_notify($2, $3)) SELECT (SELECT doc FROM ` + t + ` WHERE id = $1) FROM n`
}

// payload is a notification's JSON.
type payload struct {
	Table  uint32          `json:"t"`
	Key    *string         `json:"k"`
	Doc    json.RawMessage `json:"d"`
	Signal int             `json:"s"`
	Hash   string          `json:"h"`
	Marker string          `json:"m"`
}

// watchState is the store's listener, shared by its watches; nil while there is none.
type watchState struct {
	ctx    context.Context // the store's: its Close cancels it, ending a dial
	cancel context.CancelFunc
	wg     sync.WaitGroup // the dialing goroutine

	mu      sync.Mutex
	closed  bool
	l       *listener
	dialing *dialing // the dial in progress, nil when there is none
}

// dialing is one dial of the listening connection, which watches wait for.
type dialing struct {
	done    chan struct{} // closed once it is over: err is set, and the listener in place
	err     error
	waiters int // the watches waiting for it; under watchState.mu
}

// listener is the LISTENing connection and the goroutine reading it.
type listener struct {
	conn   *pgx.Conn
	table  uint32 // the table's OID: notifications of another table are ignored
	cancel context.CancelFunc
	done   chan struct{} // closed when the goroutine has returned (and closed the connection)
	dead   chan struct{} // closed when the listener failed; err says why
	err    error

	mu      sync.Mutex
	refs    int
	byKey   map[string]map[*sub]struct{}
	byHash  map[string]map[*sub]struct{}
	markers map[string]*sub
	beats   map[*sub]time.Duration // the watches asking for heartbeats, and how often
	rewait  context.CancelFunc     // ends the listener's current wait (a watch asks for more)
}

// sub is one watch's mailbox: the listener counts the notifications of its key (seq) and
// keeps the last full state; the watch takes them.
type sub struct {
	l    *listener
	key  string
	hash string
	wake chan struct{}

	// Guarded by l.mu.
	seq       uint64          // notifications of the key so far
	lastSeq   uint64          // seq of the last one carrying a state (0: none)
	last      json.RawMessage // its document; nil: deleted
	marker    string          // the marker the watch waits for
	markerSeq uint64          // seq when it came
	markerIn  bool
	beat      uint64 // heartbeats given to the watch
}

// subscribe adds a watch of key, waiting for the store's listener (dialled by a goroutine of
// the store's own when there is none, or a failed one) at most until ctx ends; every > 0 asks
// for heartbeats that often.
func (s *backend) subscribe(ctx context.Context, key string, every time.Duration) (*sub, error) {
	w := &s.watch
	for {
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			return nil, errStoreClosed
		}
		if w.l != nil && w.l.failed() {
			w.l = nil
		}
		if l := w.l; l != nil {
			u := l.add(key, every)
			w.mu.Unlock()
			return u, nil
		}
		d := w.dialing
		if d == nil {
			d = &dialing{done: make(chan struct{})}
			w.dialing = d
			w.wg.Add(1)
			go s.dial(d)
		}
		d.waiters++
		w.mu.Unlock()
		select {
		case <-d.done:
			w.mu.Lock()
			d.waiters--
			w.mu.Unlock()
			if d.err != nil {
				return nil, d.err
			}
		case <-ctx.Done():
			w.mu.Lock()
			d.waiters--
			idle := w.idleLocked()
			w.mu.Unlock()
			if idle != nil {
				idle.stop()
			}
			return nil, ctx.Err()
		}
	}
}

// idleLocked detaches the listener when no watch uses it and none waits for it, and returns it
// for the caller to stop (nil when there is none). w.mu is held.
func (w *watchState) idleLocked() *listener {
	l := w.l
	if l == nil || w.dialing != nil {
		return nil
	}
	l.mu.Lock()
	idle := l.refs == 0
	l.mu.Unlock()
	if !idle {
		return nil
	}
	w.l = nil
	return l
}

// dial connects the store's listener for the watches waiting for it, with the store's context.
func (s *backend) dial(d *dialing) {
	w := &s.watch
	defer w.wg.Done()
	l, err := s.listen(w.ctx)
	w.mu.Lock()
	w.dialing = nil
	var drop *listener
	switch {
	case w.closed:
		err, drop = errStoreClosed, l
	case err != nil:
	case d.waiters == 0:
		drop = l // every watch that waited gave up
	default:
		w.l = l
	}
	d.err = err
	close(d.done)
	w.mu.Unlock()
	if drop != nil {
		drop.stop()
	}
}

// add registers a watch of key. w.mu is held, so that l is still the store's listener.
func (l *listener) add(key string, every time.Duration) *sub {
	h := md5.Sum([]byte(key))
	u := &sub{l: l, key: key, hash: hex.EncodeToString(h[:]), wake: make(chan struct{}, 1)}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refs++
	add(l.byKey, u.key, u)
	add(l.byHash, u.hash, u)
	if every > 0 {
		l.beats[u] = every
		if l.rewait != nil {
			l.rewait() // the listener's wait may be longer than every
		}
	}
	return u
}

func add(m map[string]map[*sub]struct{}, k string, u *sub) {
	if m[k] == nil {
		m[k] = map[*sub]struct{}{}
	}
	m[k][u] = struct{}{}
}

func remove(m map[string]map[*sub]struct{}, k string, u *sub) {
	delete(m[k], u)
	if len(m[k]) == 0 {
		delete(m, k)
	}
}

// unsubscribe removes the watch; the last one's end stops the listener, and returns once its
// goroutine has.
func (s *backend) unsubscribe(u *sub) {
	w := &s.watch
	w.mu.Lock()
	l := u.l
	l.mu.Lock()
	l.refs--
	remove(l.byKey, u.key, u)
	remove(l.byHash, u.hash, u)
	delete(l.beats, u)
	if u.marker != "" {
		delete(l.markers, u.marker)
	}
	last := l.refs == 0
	l.mu.Unlock()
	if last && w.l == l {
		w.l = nil
	} else {
		last = false
	}
	w.mu.Unlock()
	if last {
		l.stop()
	}
}

// closeWatches ends the store's watches with errStoreClosed; Close calls it first.
func (s *backend) closeWatches() {
	w := &s.watch
	w.mu.Lock()
	w.closed = true
	l := w.l
	w.l = nil
	w.mu.Unlock()
	if w.cancel != nil {
		w.cancel() // ends a dial
	}
	if l != nil {
		l.fail(errStoreClosed)
		l.stop()
	}
	w.wg.Wait()
}

// listen connects the listening connection and LISTENs; the channel is in place when it returns.
// The connection takes at most connect_timeout, the LISTEN at most listenCheck.
func (s *backend) listen(ctx context.Context) (*listener, error) {
	cfg := s.pool.Config().ConnConfig
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: listening connection: %w", err)
	}
	ctx, cancelListen := context.WithTimeout(ctx, s.listenCheck)
	defer cancelListen()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("postgres: listen: %w", err)
	}
	// After the LISTEN, and with the pool's settings (search_path): the table the writes use.
	var oid uint32
	if err := conn.QueryRow(ctx, `SELECT to_regclass($1)::oid`, pgx.Identifier{s.table}.Sanitize()).Scan(&oid); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("postgres: listen: table %s: %w", s.table, err)
	}
	lctx, cancel := context.WithCancel(context.Background())
	l := &listener{conn: conn, table: oid, cancel: cancel, done: make(chan struct{}), dead: make(chan struct{}),
		byKey: map[string]map[*sub]struct{}{}, byHash: map[string]map[*sub]struct{}{}, markers: map[string]*sub{},
		beats: map[*sub]time.Duration{}}
	go l.run(lctx, s.listenCheck)
	return l, nil
}

// listenerPID returns the server process of the store's listener, 0 when there is none (tests).
func (s *backend) listenerPID() uint32 {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	if s.watch.l == nil {
		return 0
	}
	return s.watch.l.conn.PgConn().PID()
}

func (l *listener) failed() bool {
	select {
	case <-l.dead:
		return true
	default:
		return false
	}
}

// fail ends the listener's watches with err (once).
func (l *listener) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.failed() {
		l.err = err
		close(l.dead)
	}
}

func (l *listener) stop() {
	l.cancel()
	<-l.done
}

// run reads the notifications and makes the round trips of the heartbeat (see the comment at
// the top of this file) until ctx ends or the connection fails.
func (l *listener) run(ctx context.Context, check time.Duration) {
	defer close(l.done)
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), closeGrace)
		defer cancel()
		l.conn.Close(cctx)
	}()
	last := time.Now() // when the last round trip that was answered began
	for {
		every := l.interval(check)
		if wait := time.Until(last.Add(every)); wait > 0 {
			wctx, cancel := context.WithTimeout(ctx, wait)
			l.mu.Lock()
			l.rewait = cancel
			l.mu.Unlock()
			n, err := l.conn.WaitForNotification(wctx)
			l.mu.Lock()
			l.rewait = nil
			l.mu.Unlock()
			cancel()
			if n != nil {
				l.dispatch(n.Payload)
			}
			if ctx.Err() != nil {
				return
			}
			if err != nil && (l.conn.IsClosed() || wctx.Err() == nil) {
				l.fail(fmt.Errorf("postgres: the listening connection failed: %w", err))
				return
			}
			continue // a notification, the end of the wait, or a watch asking for more
		}
		// A round trip: its answer comes after the notifications sent before it, which pgx
		// keeps for WaitForNotification; they are dispatched before the heartbeat.
		sent := time.Now()
		pctx, cancel := context.WithTimeout(ctx, check)
		err := l.conn.Ping(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			l.fail(fmt.Errorf("postgres: the listening connection failed: no answer to a round trip within %v: %w", check, err))
			return
		}
		done, cancelDone := context.WithCancel(ctx)
		cancelDone() // only the notifications already received
		for {
			n, _ := l.conn.WaitForNotification(done)
			if n == nil {
				break
			}
			l.dispatch(n.Payload)
		}
		l.heartbeat()
		last = sent
	}
}

// interval returns how often to make a round trip: the shortest interval the watches ask for,
// check when none asks for a shorter one.
func (l *listener) interval(check time.Duration) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d := driver.Shortest(l.beats); d > 0 {
		return min(check, d)
	}
	return check
}

// heartbeat gives a heartbeat to the watches that ask for them.
func (l *listener) heartbeat() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for u := range l.beats {
		u.beat++
		u.poke()
	}
}

// dispatch hands one notification to the watches it concerns.
func (l *listener) dispatch(raw string) {
	var p payload
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return // not the store's: ignored
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var subs map[*sub]struct{}
	switch {
	case p.Marker != "":
		if u := l.markers[p.Marker]; u != nil {
			u.markerSeq, u.markerIn = u.seq, true
			u.poke()
		}
		return
	case p.Table != l.table:
		return // a table of the same name in another schema
	case p.Key != nil:
		subs = l.byKey[*p.Key]
	case p.Hash != "" && p.Signal != 0:
		subs = l.byHash[p.Hash]
	}
	for u := range subs {
		u.seq++
		if p.Signal == 0 && p.Key != nil {
			u.lastSeq = u.seq
			u.last = p.Doc
			if len(u.last) == 0 || string(u.last) == "null" {
				u.last = nil
			}
		}
		u.poke()
	}
}

func (u *sub) poke() {
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

// Watch implements driver.Watcher (see the comment at the top of this file). With notify=false
// it answers store.ErrWatchUnsupported.
func (s *backend) Watch(ctx context.Context, key string, fn func(driver.Notice) error) error {
	if s.channel == "" {
		return store.ErrWatchUnsupported
	}
	u, err := s.subscribe(ctx, key, store.HeartbeatEvery(ctx))
	if err != nil {
		return err
	}
	defer s.unsubscribe(u)
	consumed, err := s.sync(ctx, u, fn)
	u.l.mu.Lock()
	beats := u.beat // those given before the first state are not delivered
	u.l.mu.Unlock()
	for err == nil {
		select {
		case <-u.wake:
		case <-u.l.dead:
			return u.l.err
		case <-ctx.Done():
			return ctx.Err()
		}
		u.l.mu.Lock()
		seq, lastSeq, last, beat := u.seq, u.lastSeq, u.last, u.beat
		u.l.mu.Unlock()
		switch {
		case seq == consumed:
		case lastSeq == seq:
			// The newest notification carries its state: it is newer than all delivered.
			consumed = seq
			err = s.deliver(last, true, fn)
		default:
			// The newest is a signal: read.
			consumed, err = s.sync(ctx, u, fn)
		}
		if err == nil && beat != beats {
			// After the states of the notifications dispatched before it.
			beats = beat
			err = fn(driver.Notice{Heartbeat: true})
		}
	}
	return err
}

// sync delivers a state that is at least as new as every notification counted so far, and
// returns the count it covers: a read with a marker, or, when notifications of the key came
// before the marker, the last of them if it carries its state (else it reads again).
func (s *backend) sync(ctx context.Context, u *sub, fn func(driver.Notice) error) (uint64, error) {
	for {
		var b [12]byte
		rand.Read(b[:])
		marker := hex.EncodeToString(b[:])
		u.l.mu.Lock()
		from := u.seq
		u.marker, u.markerIn = marker, false
		u.l.markers[marker] = u
		u.l.mu.Unlock()
		mark, _ := json.Marshal(payload{Marker: marker})
		var raw []byte
		err := s.markRead(ctx, u.key, string(mark), &raw)
		if err != nil {
			return 0, s.explain(ctx, err)
		}
		for {
			u.l.mu.Lock()
			in := u.markerIn
			u.l.mu.Unlock()
			if in {
				break
			}
			select {
			case <-u.wake:
			case <-u.l.dead:
				return 0, u.l.err
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
		u.l.mu.Lock()
		delete(u.l.markers, marker)
		u.marker = ""
		at, lastSeq, last := u.markerSeq, u.lastSeq, u.last
		u.l.mu.Unlock()
		switch {
		case at == from:
			return at, s.deliver(raw, raw != nil, fn)
		case lastSeq == at:
			return at, s.deliver(last, last != nil, fn)
		}
	}
}

// markRead reads key and sends mark in one statement, with at most cap(s.marks) of them in
// flight: with the writes' and the Gets' own bounds (batch.go), that leaves a connection to
// the writes whatever the number of watches starting.
func (s *backend) markRead(ctx context.Context, key, mark string, raw *[]byte) error {
	select {
	case s.marks <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.marks }()
	return s.pool.QueryRow(ctx, s.q.mark, key, s.channel, mark).Scan(raw)
}

// deliver decodes a document (nil: missing) and calls fn.
func (s *backend) deliver(raw []byte, found bool, fn func(driver.Notice) error) error {
	if !found || raw == nil {
		return fn(driver.Notice{})
	}
	doc, err := driver.DecodeRow("postgres", s.table, raw)
	if err != nil {
		return err
	}
	return fn(driver.Notice{Found: true, Doc: unescapeValue(doc).(map[string]any)})
}
