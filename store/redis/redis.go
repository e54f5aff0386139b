package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	goredis "github.com/redis/go-redis/v9"

	"github.com/leasehold/leasehold/store"
)

// DefaultPrefix is the key prefix used when the URL has no prefix parameter.
const DefaultPrefix = "leasehold:"

// ErrNotJSON means a key holds a value that is not a JSON object: something other than this
// store wrote it. The value is left as it is.
var ErrNotJSON = errors.New("store/redis: value is not a JSON object")

// Store is a store.Store on one Redis database. It is safe for concurrent use.
type Store struct {
	client *goredis.Client
	prefix string
}

var _ store.Store = (*Store)(nil)

// Open connects to the Redis server named by rawURL (see the package documentation for its
// form) and pings it.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	return store.OpenWith(ctx, "store/redis", rawURL, openURL)
}

// OpenURL is Open for a parsed URL.
func OpenURL(ctx context.Context, u *url.URL) (*Store, error) {
	return store.OpenURLWith(ctx, "store/redis", u, openURL)
}

// openURL is OpenURL for store.Open, which names the URL in its errors itself.
func openURL(ctx context.Context, u *url.URL) (*Store, error) {
	opts, prefix, err := parseOptions(u)
	if err != nil {
		return nil, err
	}
	s := &Store{client: goredis.NewClient(opts), prefix: prefix}
	if err := s.client.Ping(ctx).Err(); err != nil {
		s.client.Close()
		return nil, fmt.Errorf("store/redis: ping %s: %w", opts.Addr, store.RedactError(err, u))
	}
	return s, nil
}

// Close closes the connections to the server.
func (s *Store) Close() error { return s.client.Close() }

// Prefix returns the prefix put before every key.
func (s *Store) Prefix() string { return s.prefix }

// Client returns the underlying go-redis client, for diagnostics and tests.
func (s *Store) Client() *goredis.Client { return s.client }

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (map[string]any, error) {
	if err := store.CheckCall(ctx, key); err != nil {
		return nil, store.WrapKey("get", key, err)
	}
	raw, err := s.client.Get(ctx, s.prefix+key).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, store.WrapKey("get", key, store.ErrNotFound)
	}
	if err != nil {
		return nil, store.WrapKey("get", key, err)
	}
	doc, err := decode(raw)
	return doc, store.WrapKey("get", key, err)
}

// Create implements store.Store.
func (s *Store) Create(ctx context.Context, key string, doc map[string]any) error {
	if err := store.CheckCall(ctx, key); err != nil {
		return store.WrapKey("create", key, err)
	}
	n, err := store.NormalizeDoc(doc)
	if err != nil {
		return store.WrapKey("create", key, err)
	}
	b, err := json.Marshal(n)
	if err != nil {
		return store.WrapKey("create", key, fmt.Errorf("%w: %v", store.ErrInvalid, err))
	}
	err = s.client.SetArgs(ctx, s.prefix+key, b, goredis.SetArgs{Mode: "NX"}).Err()
	if errors.Is(err, goredis.Nil) {
		return store.WrapKey("create", key, store.ErrExists)
	}
	return store.WrapKey("create", key, err)
}

// Patch implements store.Store.
func (s *Store) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	if err := store.CheckCall(ctx, key); err != nil {
		return store.WrapKey("patch", key, err)
	}
	n, err := store.NormalizeDoc(fields)
	if err != nil {
		return store.WrapKey("patch", key, err)
	}
	args, err := conditionArgs("patch", cond)
	if err != nil {
		return store.WrapKey("patch", key, err)
	}
	for k, v := range n {
		name, _ := json.Marshal(k) // a string always encodes
		value, err := json.Marshal(v)
		if err != nil {
			return store.WrapKey("patch", key, fmt.Errorf("%w: field %q: %v", store.ErrInvalid, k, err))
		}
		args = append(args, name, value)
	}
	return store.WrapKey("patch", key, s.run(ctx, key, cond, args))
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, key string, cond *store.Condition) error {
	if err := store.CheckCall(ctx, key); err != nil {
		return store.WrapKey("delete", key, err)
	}
	args, err := conditionArgs("delete", cond)
	if err != nil {
		return store.WrapKey("delete", key, err)
	}
	return store.WrapKey("delete", key, s.run(ctx, key, cond, args))
}

// decode reads a stored document, refusing anything but a JSON object with ErrNotJSON.
func decode(raw []byte) (map[string]any, error) { return store.DecodeObject(raw, ErrNotJSON) }
