package nats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// ServiceType is the service type configurations name to open a [Store] from the parameters
// url and bucket (see the package documentation).
const ServiceType = "Webda/NatsStore"

func init() {
	store.Register(store.Backend{
		Schemes:     []string{"nats"},
		Open:        driver.Opener(openURL),
		ServiceType: ServiceType,
		Example:     "nats://host:port[,host:port]",
		Params:      []string{"bucket"},
	})
}

// ErrNotJSON means a key holds a value that is not a JSON object: something other than this
// store wrote it. The value is left as it is.
var ErrNotJSON = errors.New("store/nats: value is not a JSON object")

// ErrNoJetStream means the server does not have JetStream enabled.
var ErrNoJetStream = errors.New("store/nats: JetStream is not enabled on the server (start nats-server with -js)")

// Store is a store.Store on a JetStream key-value bucket. It is safe for concurrent use.
type Store struct {
	*driver.Portable
	b *backend
}

// backend is the driver.Driver behind Store.
type backend struct {
	conn       *natsgo.Conn
	js         jetstream.JetStream
	kv         jetstream.KeyValue
	stream     jetstream.Stream
	streamName string // the bucket's, whose leader answers reads (lastFor)

	watches watchState // watch.go
	epoch   connEpoch  // connlost.go
}

// Open connects to the NATS server named by rawURL (see the package documentation for its
// form), checks that it has JetStream and opens (or creates) the bucket.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	return driver.OpenWith(ctx, "store/nats", rawURL, openURL)
}

// OpenURL is Open for a parsed URL.
func OpenURL(ctx context.Context, u *url.URL) (*Store, error) {
	return driver.OpenURLWith(ctx, "store/nats", u, openURL)
}

// openURL is OpenURL for store.Open, which names the URL in its errors itself.
func openURL(ctx context.Context, u *url.URL) (*Store, error) {
	cfg, err := parseConfig(u)
	if err != nil {
		return nil, store.ConfigError(err)
	}
	if _, ok := ctx.Deadline(); !ok && cfg.dialTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.dialTimeout)
		defer cancel()
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < cfg.dialTimeout {
		cfg.options = append(cfg.options, natsgo.Timeout(max(time.Until(dl), time.Millisecond)))
	}
	conn, err := natsgo.Connect(cfg.servers, cfg.options...)
	if err != nil {
		err = fmt.Errorf("store/nats: connect to %s: %w", cfg.addrs, scrub(driver.ExplainTLS(err), u))
		if errors.Is(err, natsgo.ErrAuthorization) || errors.Is(err, natsgo.ErrAuthExpired) || errors.Is(err, natsgo.ErrAuthRevoked) {
			err = store.ConfigError(err) // the server refused the credentials
		}
		return nil, err
	}
	s := &backend{conn: conn}
	s.epoch.init(conn)
	if err := s.openBucket(ctx, cfg); err != nil {
		conn.Close()
		return nil, scrub(err, u)
	}
	return &Store{Portable: driver.New(s), b: s}, nil
}

func (s *backend) openBucket(ctx context.Context, cfg *config) error {
	js, err := jetstream.New(s.conn)
	if err != nil {
		return fmt.Errorf("store/nats: %w", err)
	}
	s.js = js
	per := cfg.dialTimeout
	// Without JetStream, every KV call would time out or fail with a vague error; ask first.
	if _, err := retryUnanswered(ctx, per, js.AccountInfo); err != nil {
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			return fmt.Errorf("%w at %s: %w", ErrNoJetStream, cfg.addrs, err)
		}
		return fmt.Errorf("store/nats: JetStream account info from %s: %w", cfg.addrs, err)
	}
	name := cfg.bucket.Bucket
	version := s.conn.ConnectedServerVersion()
	lookup := func(ctx context.Context) (jetstream.KeyValue, error) { return js.KeyValue(ctx, name) }
	kv, err := retryUnanswered(ctx, per, lookup)
	if errors.Is(err, jetstream.ErrBucketNotFound) && cfg.create {
		if err := checkReplicas(name, cfg.bucket.Replicas, version); err != nil {
			return err
		}
		kv, err = retryUnanswered(ctx, per, func(actx context.Context) (jetstream.KeyValue, error) {
			kv, err := js.CreateKeyValue(actx, cfg.bucket)
			if err != nil {
				// Another process may have created it meanwhile, or an attempt of this one
				// whose answer was lost. This attempt's deadline may have passed: a fresh one.
				if kv2, err2 := attempt(ctx, per, lookup); err2 == nil {
					return kv2, nil
				}
			}
			return kv, err
		})
		if err != nil {
			return fmt.Errorf("store/nats: create bucket %q: %w", name, err)
		}
	}
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return fmt.Errorf("store/nats: bucket %q does not exist (and create_bucket=false): %w", name, err)
	}
	if err != nil {
		return fmt.Errorf("store/nats: bucket %q: %w", name, err)
	}
	s.kv = kv
	s.streamName = "KV_" + name
	s.stream, err = retryUnanswered(ctx, per, func(ctx context.Context) (jetstream.Stream, error) { return js.Stream(ctx, s.streamName) })
	if err != nil {
		return fmt.Errorf("store/nats: the stream of bucket %q: %w", name, err)
	}
	return checkReplicas(name, s.stream.CachedInfo().Config.Replicas, version)
}

// Close closes the connection to the server.
func (s *backend) Close() error {
	s.conn.Close()
	s.watches.close()
	return nil
}

// Bucket returns the key-value bucket, for diagnostics and tests.
func (s *Store) Bucket() jetstream.KeyValue { return s.b.kv }

// JetStream returns the JetStream context, for diagnostics and tests.
func (s *Store) JetStream() jetstream.JetStream { return s.b.js }

func (s *backend) Get(ctx context.Context, key string) (doc map[string]any, err error) {
	err = s.epoch.call(ctx, func(ctx context.Context) error {
		doc, err = s.get(ctx, key)
		return err
	})
	return doc, err
}

func (s *backend) get(ctx context.Context, key string) (map[string]any, error) {
	m, err := s.lastFor(ctx, EncodeKey(key))
	if err != nil {
		return nil, connErr(notFound(err))
	}
	if deleted(m.header) {
		return nil, driver.Wrap(store.ErrNotFound, fmt.Errorf("store/nats: key %s: %w", EncodeKey(key), jetstream.ErrKeyDeleted))
	}
	return decode(m.data)
}

// Create writes the document on the key's revision: none when the key has no message, the
// delete marker's when it was deleted. nats.go's KV Create does the same, but when its read of
// the marker fails (its deadline cuts it) it answers the first write's conflict as "key
// exists", for a key that does not exist: here that read's failure is the answer, an unknown
// outcome (T7). When the key changed in between, the write conflicts and the key is read
// again, until the context ends.
func (s *backend) Create(ctx context.Context, key string, doc map[string]any) error {
	return s.epoch.call(ctx, func(ctx context.Context) error { return s.create(ctx, key, doc) })
}

func (s *backend) create(ctx context.Context, key string, doc map[string]any) error {
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("%w: %v", store.ErrInvalid, err)
	}
	k := EncodeKey(key)
	var rev uint64
	for {
		_, werr := s.kv.Update(ctx, k, b, rev)
		if !isConflict(werr) {
			return connErr(werr)
		}
		m, err := s.lastFor(ctx, k)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			rev = 0 // purged meanwhile
		case err != nil:
			return connErr(err)
		case !deleted(m.header):
			return driver.Wrap(store.ErrExists, fmt.Errorf("store/nats: key %s holds revision %d: %w", k, m.seq, werr))
		default:
			rev = m.seq
		}
	}
}

// deleted reports whether a key's message (its headers) is a delete marker, as nats.go's KV
// tells one: a KV-Operation header (DEL or PURGE), or a marker the server put there
// (Nats-Marker-Reason: the message aged out, was purged or removed).
func deleted(h natsgo.Header) bool {
	return h.Get("KV-Operation") != "" || h.Get(jetstream.MarkerReasonHeader) != ""
}

func (s *backend) Patch(ctx context.Context, key string, fields map[string]any, cond *driver.Condition) error {
	return s.epoch.call(ctx, func(ctx context.Context) error { return connErr(s.write(ctx, key, cond, fields)) })
}

func (s *backend) Delete(ctx context.Context, key string, cond *driver.Condition) error {
	return s.epoch.call(ctx, func(ctx context.Context) error { return connErr(s.write(ctx, key, cond, nil)) })
}

// write reads the entry, checks cond and writes the patched document (or a delete marker, when
// fields is nil) on the revision it read; see driver.ReadCheckWrite.
func (s *backend) write(ctx context.Context, key string, cond *driver.Condition, fields map[string]any) error {
	k := EncodeKey(key)
	read := func() (map[string]any, uint64, error) {
		m, err := s.lastFor(ctx, k)
		if err != nil {
			return nil, 0, notFound(err)
		}
		if deleted(m.header) {
			return nil, 0, driver.Wrap(store.ErrNotFound, fmt.Errorf("store/nats: key %s: %w", k, jetstream.ErrKeyDeleted))
		}
		doc, err := decode(m.data)
		return doc, m.seq, err
	}
	write := func(rev uint64, doc []byte) (bool, error) {
		var err error
		if doc == nil {
			err = s.kv.Delete(ctx, k, jetstream.LastRevision(rev))
		} else {
			_, err = s.kv.Update(ctx, k, doc, rev)
		}
		if isConflict(err) {
			return true, nil
		}
		return false, err
	}
	return driver.ReadCheckWrite(ctx, cond, fields, read, write)
}

// isConflict reports whether err is JetStream's "wrong last sequence": the key's revision is not
// the one the write was conditioned on.
func isConflict(err error) bool {
	if err == nil {
		return false
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
	}
	return errors.Is(err, jetstream.ErrKeyExists)
}

// connErr explains the error of a write attempted while the client is reconnecting: with no
// reconnect buffer, nats.go reports it as an exceeded buffer.
func connErr(err error) error {
	if errors.Is(err, natsgo.ErrReconnectBufExceeded) {
		return fmt.Errorf("store/nats: not connected to the server (reconnecting): %w", err)
	}
	return err
}

func notFound(err error) error {
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) || errors.Is(err, jetstream.ErrMsgNotFound) {
		return driver.Wrap(store.ErrNotFound, err)
	}
	return err
}

// decode reads a stored document, refusing anything but a JSON object with ErrNotJSON.
func decode(raw []byte) (map[string]any, error) { return driver.DecodeObject(raw, ErrNotJSON) }
