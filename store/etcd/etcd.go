package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// ServiceType is the service type configurations name to open a [Store] from the parameters
// url and prefix (see the package documentation).
const ServiceType = "Webda/EtcdStore"

func init() {
	store.Register(store.Backend{
		Schemes:     []string{"etcd"},
		Open:        driver.Opener(openURL),
		ServiceType: ServiceType,
		Example:     "etcd://host:port[,host:port]",
		Params:      []string{"prefix"},
	})
}

// ErrNotJSON means a key holds a value that is not a JSON object: something other than this
// store wrote it. The value is left as it is.
var ErrNotJSON = errors.New("store/etcd: value is not a JSON object")

// Store is a store.Store on an etcd cluster. It is safe for concurrent use.
type Store struct {
	*driver.Portable
	b *backend
}

// backend is the driver.Driver behind Store.
type backend struct {
	client *clientv3.Client
	prefix string
	known  knownValues
}

// Open connects to the etcd cluster named by rawURL (see the package documentation for its
// form) and checks that it answers.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	return driver.OpenWith(ctx, "store/etcd", rawURL, openURL)
}

// OpenURL is Open for a parsed URL.
func OpenURL(ctx context.Context, u *url.URL) (*Store, error) {
	return driver.OpenURLWith(ctx, "store/etcd", u, openURL)
}

// openURL is OpenURL for store.Open, which names the URL in its errors itself.
func openURL(ctx context.Context, u *url.URL) (*Store, error) {
	cfg, prefix, err := parseConfig(u)
	if err != nil {
		return nil, store.ConfigError(err)
	}
	// The client outlives ctx, but connecting (and authenticating, which New does when the URL
	// has a user) must not.
	cfg.Context = context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok && (cfg.DialTimeout == 0 || time.Until(dl) < cfg.DialTimeout) {
		cfg.DialTimeout = max(time.Until(dl), time.Millisecond)
	}
	c, err := clientv3.New(cfg)
	if err != nil {
		return nil, refused(fmt.Errorf("store/etcd: connect to %s: %w", strings.Join(cfg.Endpoints, ","), store.RedactError(explainTLS(ctx, cfg, err), u)), err)
	}
	pctx := ctx
	if _, ok := ctx.Deadline(); !ok && cfg.DialTimeout > 0 {
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeout(ctx, cfg.DialTimeout)
		defer cancel()
	}
	// The client connects lazily: a first request tells an unreachable cluster at once.
	if _, err := c.Get(pctx, prefix, clientv3.WithCountOnly(), clientv3.WithLimit(1)); err != nil {
		c.Close()
		return nil, refused(fmt.Errorf("store/etcd: no answer from %s: %w", strings.Join(cfg.Endpoints, ","), store.RedactError(explainTLS(ctx, cfg, err), u)), err)
	}
	b := &backend{client: c, prefix: prefix}
	return &Store{Portable: driver.New(b), b: b}, nil
}

// refused returns wrapped, the error of an Open that failed with cause, marked as a
// configuration error when cause is the cluster's refusal of the URL's credentials: a wrong
// user or password, none where authentication is on, or a user without permission on the
// prefix. Waiting does not cure those (C7, A8).
func refused(wrapped, cause error) error {
	for e := cause; e != nil; e = errors.Unwrap(e) {
		switch rpctypes.Error(e) {
		case rpctypes.ErrAuthFailed, rpctypes.ErrUserEmpty, rpctypes.ErrPermissionDenied, rpctypes.ErrInvalidAuthToken:
			return store.ConfigError(wrapped)
		}
	}
	return wrapped
}

// Close closes the connections to the cluster.
func (s *backend) Close() error { return s.client.Close() }

// Prefix returns the prefix put before every key.
func (s *Store) Prefix() string { return s.b.prefix }

// Client returns the underlying etcd client, for diagnostics and tests.
func (s *Store) Client() *clientv3.Client { return s.b.client }

func (s *backend) Get(ctx context.Context, key string) (map[string]any, error) {
	k := s.prefix + key
	resp, err := s.client.Get(ctx, k)
	if err != nil {
		return nil, err
	}
	s.known.saw(k, resp.Kvs)
	if len(resp.Kvs) == 0 {
		return nil, store.ErrNotFound
	}
	return decode(resp.Kvs[0].Value)
}

func (s *backend) Create(ctx context.Context, key string, doc map[string]any) error {
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("%w: %v", store.ErrInvalid, err)
	}
	k := s.prefix + key
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(b))).
		Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return store.ErrExists
	}
	s.known.wrote(k, resp.Header.Revision, b)
	return nil
}

func (s *backend) Patch(ctx context.Context, key string, fields map[string]any, cond *driver.Condition) error {
	return s.write(ctx, key, cond, fields)
}

func (s *backend) Delete(ctx context.Context, key string, cond *driver.Condition) error {
	return s.write(ctx, key, cond, nil)
}

// write reads the document, checks cond and writes the patched document (or deletes it, when
// fields is nil) in a transaction on the revision it read; see driver.ReadCheckWrite. When the
// key changed in between, the transaction returns its new value, which the next round reads
// instead of asking again.
func (s *backend) write(ctx context.Context, key string, cond *driver.Condition, fields map[string]any) error {
	k := s.prefix + key
	var kvs []*mvccpb.KeyValue
	fresh := false // kvs holds the value a failed transaction returned: no need to ask again
	// The first round may start from the value this client last read, wrote or was sent by a
	// watch instead of reading it again: the transaction compares the key's revision, which
	// names one value, so a value that changed since only makes it fail and return the new
	// one. A value that fails cond may be stale, and so is read again before ErrConditionFailed
	// is answered.
	if kv, ok := s.known.get(k); ok {
		if doc, err := decode(kv.Value); err == nil && driver.ConditionError(doc, cond) == nil {
			kvs, fresh = []*mvccpb.KeyValue{kv}, true
		}
	}
	// The transaction compares the value as well as its revision: an etcd restored without
	// bumping its revisions can give a revision already seen to another value (B1).
	var based []byte
	read := func() (map[string]any, int64, error) {
		if !fresh {
			resp, err := s.client.Get(ctx, k)
			if err != nil {
				return nil, 0, err
			}
			kvs = resp.Kvs
			s.known.saw(k, kvs)
		}
		fresh = false
		if len(kvs) == 0 {
			return nil, 0, store.ErrNotFound
		}
		based = kvs[0].Value
		doc, err := decode(kvs[0].Value)
		return doc, kvs[0].ModRevision, err
	}
	write := func(rev int64, doc []byte) (bool, error) {
		op := clientv3.OpDelete(k)
		if doc != nil {
			op = clientv3.OpPut(k, string(doc))
		}
		tr, err := s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(k), "=", rev), clientv3.Compare(clientv3.Value(k), "=", string(based))).
			Then(op).
			Else(clientv3.OpGet(k)).
			Commit()
		if err != nil {
			s.known.forget(k) // the write may have landed or not
			return false, err
		}
		if tr.Succeeded {
			if doc == nil {
				s.known.forget(k)
			} else {
				s.known.wrote(k, tr.Header.Revision, doc)
			}
			return false, nil
		}
		kvs, fresh = tr.Responses[0].GetResponseRange().Kvs, true
		s.known.saw(k, kvs)
		return true, nil
	}
	return driver.ReadCheckWrite(ctx, cond, fields, read, write)
}

// decode reads a stored document, refusing anything but a JSON object with ErrNotJSON.
func decode(raw []byte) (map[string]any, error) { return driver.DecodeObject(raw, ErrNotJSON) }
