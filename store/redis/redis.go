package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// ServiceType is the service type configurations name to open a [Store] from the parameters
// url and prefix (see the package documentation).
const ServiceType = "Webda/RedisStore"

func init() {
	store.Register(store.Backend{
		Schemes:     []string{"redis", "rediss", sentinelScheme, sentinelTLSScheme, clusterScheme, clusterTLSScheme},
		Open:        driver.Opener(openURL),
		ServiceType: ServiceType,
		Example:     "redis://host:port/db",
		Params:      []string{"prefix"},
	})
}

// DefaultPrefix is the key prefix used when the URL has no prefix parameter.
const DefaultPrefix = "leasehold:"

// ErrNotJSON means a key holds a value that is not a JSON object: something other than this
// store wrote it. The value is left as it is.
var ErrNotJSON = errors.New("store/redis: value is not a JSON object")

// Store is a store.Store on one Redis database, or on a Redis Cluster. It is safe for
// concurrent use.
type Store struct {
	*driver.Portable
	b *backend
}

// backend is the driver.Driver behind Store.
type backend struct {
	client  goredis.UniversalClient // a *goredis.Client, or a *goredis.ClusterClient
	prefix  string
	scripts scriptSet                                   // the scripts, for one server or for a cluster (cluster.go)
	watches watchState                                  // watch.go
	batch   *driver.Batcher[redisWrite, *goredis.Cmd]   // the writes (batch.go)
	reads   *driver.Batcher[string, *goredis.StringCmd] // the Gets (batch.go)
	syncs   *driver.Batcher[redisWrite, *goredis.Cmd]   // the watches' first reads (batch.go)
}

// Open connects to the Redis server named by rawURL (see the package documentation for its
// form) and pings it.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	return driver.OpenWith(ctx, "store/redis", rawURL, openURL)
}

// OpenURL is Open for a parsed URL.
func OpenURL(ctx context.Context, u *url.URL) (*Store, error) {
	return driver.OpenURLWith(ctx, "store/redis", u, openURL)
}

// openURL is OpenURL for store.Open, which names the URL in its errors itself.
func openURL(ctx context.Context, u *url.URL) (*Store, error) {
	set, err := parseURL(u)
	if err != nil {
		return nil, store.ConfigError(err)
	}
	client := set.newClient()
	pool := set.poolSize()
	s := &backend{client: client, prefix: set.prefix, scripts: plainScripts,
		batch: newBatcher(client, pool, set.wait), reads: newReadBatcher(client, pool), syncs: newSyncBatcher(client, pool)}
	if set.cluster != nil {
		s.scripts = clusterScripts
	}
	if err := s.ping(ctx); err != nil {
		s.client.Close()
		tlsConfig := set.tlsConfig()
		err = fmt.Errorf("store/redis: ping %s: %w", set.target(), store.RedactError(driver.ExplainTLSFailure(ctx, set.probeAddr(), tlsConfig, err), u))
		if refusedCredentials(err) {
			err = store.ConfigError(err)
		}
		return nil, err
	}
	return &Store{Portable: driver.New(s), b: s}, nil
}

// Close ends the store's watches and closes the connections to the server. The writes and reads queued
// for a pipeline fail at once (store closed); those in flight fail as their connections close
// under them, and Close returns once the goroutines sending pipelines have.
func (s *backend) Close() error {
	s.watches.close()
	s.batch.Close()
	s.reads.Close()
	s.syncs.Close()
	defer s.syncs.Wait()
	defer s.reads.Wait()
	defer s.batch.Wait()
	return s.client.Close()
}

// Prefix returns the prefix put before every key.
func (s *Store) Prefix() string { return s.b.prefix }

// Client returns the underlying go-redis client, for diagnostics and tests: a
// *goredis.Client for one server or Sentinels, a *goredis.ClusterClient for a Redis Cluster.
func (s *Store) Client() goredis.UniversalClient { return s.b.client }

// Key returns the Redis key that holds the document of key: the prefix and the key, and on a
// Redis Cluster the key in a hash tag (prefix + "{" + key + "}").
func (s *Store) Key(key string) string { return s.b.rkey(key) }

// rkey is the Redis key of a record's key.
func (s *backend) rkey(key string) string {
	if s.scripts.cluster {
		return clusterKey(s.prefix, key)
	}
	return s.prefix + key
}

// ping checks that the server answers; on a cluster, that every primary does, so that a URL
// naming one live startup node of a cluster missing a shard fails here, not at the first write there.
func (s *backend) ping(ctx context.Context) error {
	if cc, ok := s.client.(*goredis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
			return c.Ping(ctx).Err()
		})
	}
	return s.client.Ping(ctx).Err()
}

func (s *backend) Get(ctx context.Context, key string) (map[string]any, error) {
	rkey := s.rkey(key)
	raw, err := s.read(ctx, rkey).Bytes()
	if err != nil && s.rerouted(ctx, rkey, err) {
		raw, err = s.read(ctx, rkey).Bytes() // reroute.go
	}
	if errors.Is(err, goredis.Nil) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return decode(raw)
}

func (s *backend) Create(ctx context.Context, key string, doc map[string]any) error {
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("%w: %v", store.ErrInvalid, err)
	}
	return s.create(ctx, key, b) // watch.go: SET NX and its notification, in one script
}

func (s *backend) Patch(ctx context.Context, key string, fields map[string]any, cond *driver.Condition) error {
	args, err := patchArgs("patch", cond, fields)
	if err != nil {
		return err
	}
	return s.run(ctx, key, cond, args)
}

func (s *backend) Delete(ctx context.Context, key string, cond *driver.Condition) error {
	args, err := patchArgs("delete", cond, nil)
	if err != nil {
		return err
	}
	return s.run(ctx, key, cond, args)
}

// decode reads a stored document, refusing anything but a JSON object with ErrNotJSON.
func decode(raw []byte) (map[string]any, error) { return driver.DecodeObject(raw, ErrNotJSON) }

// refusedCredentials reports whether err is the server's refusal of the URL's credentials
// (WRONGPASS, or NOAUTH for a URL without a password to a server that wants one): a
// configuration error, which waiting does not cure.
func refusedCredentials(err error) bool {
	var re goredis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	return strings.HasPrefix(msg, "WRONGPASS") || strings.HasPrefix(msg, "NOAUTH") ||
		strings.Contains(msg, "invalid password") || strings.Contains(msg, "invalid username-password pair")
}
