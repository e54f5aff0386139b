package zookeeper

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// ServiceType is the service type configurations name to open a [Store] from the parameter
// url (see the package documentation).
const ServiceType = "Webda/ZooKeeperStore"

func init() {
	store.Register(store.Backend{
		Schemes:     []string{"zk"},
		Open:        driver.Opener(openURL),
		ServiceType: ServiceType,
		Example:     "zk://host:port[,host:port]/chroot",
		Params:      []string{"session_timeout", "acl", driver.PasswordFileParam, PasswordEnvParam},
	})
}

// ErrNotJSON means a znode holds data that is not a JSON object: something other than this
// store wrote it. The data is left as it is.
var ErrNotJSON = errors.New("store/zookeeper: znode data is not a JSON object")

// ErrClosed is the error of a call made after Close.
var ErrClosed = errors.New("store/zookeeper: the store is closed")

// Store is a store.Store on a ZooKeeper ensemble. It is safe for concurrent use.
type Store struct {
	*driver.Portable
	b *backend
}

// backend is the driver.Driver behind Store.
type backend struct {
	req    *client // the requests' client: it never sets a watch
	chroot string
	acl    []zk.ACL

	// What each client is dialled with.
	servers        []string
	sessionTimeout time.Duration
	dialer         zk.Dialer
	user, password string

	mu     sync.Mutex
	closed bool
	done   chan struct{}  // closed by Close
	calls  sync.WaitGroup // the goroutines of do, and those readying and closing watch clients
	watch  *client        // the watches' client, dialled by the first Watch, replaced once lost
}

// Open connects to the ensemble named by rawURL (see the package documentation for its form),
// waits for a session, and creates the chroot when it is missing.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	return driver.OpenWith(ctx, "store/zookeeper", rawURL, openURL)
}

// OpenURL is Open for a parsed URL.
func OpenURL(ctx context.Context, u *url.URL) (*Store, error) {
	return driver.OpenURLWith(ctx, "store/zookeeper", u, openURL)
}

// openURL is OpenURL for store.Open, which names the URL in its errors itself.
func openURL(ctx context.Context, u *url.URL) (*Store, error) {
	cfg, err := parseConfig(u)
	if err != nil {
		return nil, store.ConfigError(err)
	}
	b := &backend{
		chroot: cfg.chroot, acl: cfg.acl, done: make(chan struct{}),
		servers: cfg.servers, sessionTimeout: cfg.sessionTimeout, dialer: zk.Dialer(net.DialTimeout),
		user: cfg.user, password: cfg.password,
	}
	if cfg.tls != nil {
		b.dialer = tlsDialer(cfg.tls)
	}
	req, err := b.connect(true)
	if err != nil {
		return nil, err
	}
	b.req = req
	octx := ctx
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		octx, cancel = context.WithTimeout(ctx, cfg.dialTimeout)
		defer cancel()
	}
	if err := b.start(octx, cfg); err != nil {
		b.Close()
		return nil, err
	}
	return &Store{Portable: driver.New(b), b: b}, nil
}

// start waits for the first session, authenticates and makes sure the chroot exists.
func (b *backend) start(ctx context.Context, cfg *config) error {
	if b.req.conn.State() != zk.StateHasSession {
		select {
		case <-b.req.session:
		case <-ctx.Done():
			err := fmt.Errorf("store/zookeeper: no session with %s: %w", strings.Join(cfg.servers, ","), ctx.Err())
			// The client logs why it could not connect, and the store discards its logs: a
			// TLS session that fails is probed again to say why.
			return driver.ExplainTLSFailure(ctx, cfg.servers[0], cfg.tls, err)
		}
	}
	if cfg.user != "" {
		if err := b.do(ctx, func() error { return b.auth(b.req) }); err != nil {
			return store.ConfigError(fmt.Errorf("store/zookeeper: digest authentication as %q: %w", cfg.user, err))
		}
	}
	// The chroot and its parents are plain persistent znodes, not containers: the server
	// deletes a container once its last child is gone, and a Create racing that deletion would
	// fail for want of a parent. They are few and empty; leaving them costs nothing.
	p := ""
	for _, part := range strings.Split(b.chroot[1:], "/") {
		p += "/" + part
		err := b.do(ctx, func() error {
			_, err := b.req.conn.Create(p, nil, 0, b.acl)
			return err
		})
		switch {
		case err == nil, errors.Is(err, zk.ErrNodeExists):
		case errors.Is(err, zk.ErrNoAuth), errors.Is(err, zk.ErrInvalidACL):
			return store.ConfigError(fmt.Errorf("store/zookeeper: create the chroot %s: %w", p, err))
		default:
			return fmt.Errorf("store/zookeeper: create the chroot %s: %w", p, err)
		}
	}
	// Reading the chroot tells a client whose credentials may not read it now rather than at
	// its first record.
	err := b.do(ctx, func() error {
		_, _, err := b.req.conn.Children(b.chroot)
		return err
	})
	if errors.Is(err, zk.ErrNoAuth) {
		return store.ConfigError(fmt.Errorf("store/zookeeper: read the chroot %s: %w", b.chroot, err))
	}
	if err != nil {
		return fmt.Errorf("store/zookeeper: read the chroot %s: %w", b.chroot, err)
	}
	return nil
}

// tlsDialer dials the servers with TLS, verifying each against the name it is dialled by unless
// cfg names another.
func tlsDialer(cfg *tls.Config) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c := cfg.Clone()
		if c.ServerName == "" {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return nil, err
			}
			c.ServerName = host
		}
		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, address, c)
	}
}

// auth adds the store's credentials to c's session; the library adds them again on each new
// connection of the session.
func (b *backend) auth(c *client) error {
	return c.conn.AddAuth("digest", []byte(b.user+":"+b.password))
}

// do runs f, a call of the client, which takes no context, on a goroutine of its own, and
// returns its error or, when ctx ends first, ctx's error: the call then goes on without a
// waiter until its answer comes, the client gives up the connection (after two thirds of the
// session timeout without a byte from the server) or Close. Its outcome is unknown; nothing
// sends it again.
func (b *backend) do(ctx context.Context, f func() error) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	done := make(chan error, 1)
	b.calls.Go(func() { done <- f() })
	b.mu.Unlock()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close ends the sessions and waits until the clients' goroutines and the calls in flight have
// ended.
func (b *backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	close(b.done)
	w := b.watch
	b.watch = nil
	b.mu.Unlock()
	if w != nil {
		w.close()
	}
	b.req.close()
	b.calls.Wait()
	return nil
}

// Chroot returns the znode under which the records live.
func (s *Store) Chroot() string { return s.b.chroot }

// Conn returns the ZooKeeper client of the store's requests, for diagnostics and tests. The
// store's watches have a client of their own (see backend.Watch); setting a watch through this
// one would have the library send it again, racing, at the client's next connection.
func (s *Store) Conn() *zk.Conn { return s.b.req.conn }

// Path returns the znode of key's record.
func (s *Store) Path(key string) string { return s.b.path(key) }

// keyEscaper maps a key onto a znode name: letters, digits, '-' and '_' stand for themselves;
// every other byte (a '/', which would make a child, a '.', which would allow the names "." and
// "..", and the characters ZooKeeper refuses) is escaped.
var keyEscaper = driver.KeyEscaper{
	Mark: '%',
	Keep: func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
	},
	Strict: true,
	Prefix: "store/zookeeper: znode name",
}

func (b *backend) path(key string) string { return b.chroot + "/" + keyEscaper.Escape(key) }

// read returns the record under p and its znode's version, after a sync: a ZooKeeper server
// answers reads from its own copy, which may lag the leader's, and sync has it catch up with
// the leader first, so that the read sees every write completed before it started. An empty
// znode is no record (see Delete).
func (b *backend) read(ctx context.Context, p string) (map[string]any, int32, error) {
	var data []byte
	var stat *zk.Stat
	err := b.do(ctx, func() error {
		if _, err := b.req.conn.Sync(p); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		var err error
		data, stat, err = b.req.conn.Get(p)
		return err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, 0, store.ErrNotFound
	case err != nil:
		return nil, 0, err
	case len(data) == 0:
		return nil, stat.Version, store.ErrNotFound
	}
	doc, err := decode(data)
	return doc, stat.Version, err
}

func (b *backend) Get(ctx context.Context, key string) (map[string]any, error) {
	doc, _, err := b.read(ctx, b.path(key))
	return doc, err
}

// Create creates the record's znode, or, when an empty znode is there (a deleted record),
// sets its data on the version it read: either way the server checks, atomically, that no
// record is there.
func (b *backend) Create(ctx context.Context, key string, doc map[string]any) error {
	data, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("%w: %v", store.ErrInvalid, err)
	}
	p := b.path(key)
	for {
		err := b.do(ctx, func() error {
			_, err := b.req.conn.Create(p, data, 0, b.acl)
			return err
		})
		if !errors.Is(err, zk.ErrNodeExists) {
			return b.explain(err)
		}
		_, version, err := b.read(ctx, p)
		switch {
		case err == nil, errors.Is(err, ErrNotJSON):
			return store.ErrExists // a record, or data something else wrote: either way not ours to replace
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		err = b.do(ctx, func() error {
			_, err := b.req.conn.Set(p, data, version)
			return err
		})
		if !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNoNode) {
			return b.explain(err)
		}
		// Another writer changed the znode since the read: look again.
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

func (b *backend) Patch(ctx context.Context, key string, fields map[string]any, cond *driver.Condition) error {
	return b.write(ctx, key, cond, fields)
}

// Delete empties the record's znode rather than delete it: a znode created again starts at
// version 0, so a write based on a version read before the deletion could succeed on the new
// znode, whose record it never checked; an emptied znode keeps counting its versions.
func (b *backend) Delete(ctx context.Context, key string, cond *driver.Condition) error {
	return b.write(ctx, key, cond, nil)
}

// write reads the record, checks cond and sets the patched record (or empties the znode, when
// fields is nil) on the version it read; see driver.ReadCheckWrite.
func (b *backend) write(ctx context.Context, key string, cond *driver.Condition, fields map[string]any) error {
	p := b.path(key)
	read := func() (map[string]any, int32, error) { return b.read(ctx, p) }
	write := func(version int32, data []byte) (bool, error) {
		if data == nil {
			data = []byte{}
		}
		err := b.do(ctx, func() error {
			_, err := b.req.conn.Set(p, data, version)
			return err
		})
		if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
			return true, nil
		}
		return false, b.explain(err)
	}
	return driver.ReadCheckWrite(ctx, cond, fields, read, write)
}

// explain returns the error of a write: a refusal of the ACLs as a configuration error, and a
// lost connection or session as what it is, an unknown outcome.
func (b *backend) explain(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoAuth):
		return fmt.Errorf("store/zookeeper: the znode's ACL refuses this client: %w", err)
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrSessionExpired), errors.Is(err, zk.ErrClosing):
		return fmt.Errorf("store/zookeeper: the connection ended before the answer, the write may or may not have been made: %w", err)
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("store/zookeeper: the chroot %s is gone: %w", b.chroot, err)
	}
	return err
}

// decode reads a record, refusing anything but a JSON object with ErrNotJSON.
func decode(raw []byte) (map[string]any, error) { return driver.DecodeObject(raw, ErrNotJSON) }

// discard is the client's logger: the store returns errors instead of logging them.
type discard struct{}

func (discard) Printf(string, ...any) {}
