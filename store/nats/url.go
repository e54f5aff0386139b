package nats

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// DefaultBucket is the bucket used when the URL has no bucket parameter.
const DefaultBucket = "leasehold"

var knownParams = append([]string{"bucket", "create_bucket", "replicas", "storage", "dial_timeout", "ping_interval", "reconnect_wait"}, securityParams...)

// config is what a store URL says.
type config struct {
	servers     string // comma-separated server URLs with their credentials, for nats.Connect
	addrs       string // host:port list, for messages
	bucket      jetstream.KeyValueConfig
	create      bool
	dialTimeout time.Duration
	options     []natsgo.Option
}

// parseConfig reads a store URL. Its errors never hold the URL's password.
func parseConfig(u *url.URL) (*config, error) {
	if !strings.EqualFold(u.Scheme, "nats") {
		return nil, fmt.Errorf("store/nats: URL scheme %q is not nats", u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" {
		return nil, errors.New("store/nats: the URL names no server (nats://host:port[,host:port])")
	}
	if u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("store/nats: unexpected path %q in the URL (use the bucket parameter)", u.Path)
	}
	q := u.Query()
	for k := range q {
		if !slices.Contains(knownParams, k) {
			return nil, fmt.Errorf("store/nats: unknown URL parameter %q (known: %s)", k, strings.Join(knownParams, ", "))
		}
	}
	c := &config{
		bucket:      jetstream.KeyValueConfig{Bucket: DefaultBucket, History: 1, Replicas: 1, Storage: jetstream.FileStorage},
		create:      true,
		dialTimeout: 5 * time.Second,
		addrs:       u.Host,
	}
	c.bucket.Bucket = driver.TakeParam(q, "bucket", c.bucket.Bucket)
	if !validBucket(c.bucket.Bucket) {
		return nil, fmt.Errorf("store/nats: URL parameter \"bucket\": %q is not a bucket name (letters, digits, '-' and '_')", c.bucket.Bucket)
	}
	var err error
	if c.create, err = boolParam(q, "create_bucket", true); err != nil {
		return nil, err
	}
	user, security, err := securityOptions(u, q)
	if err != nil {
		return nil, err
	}
	if err := c.parseBucketParams(q); err != nil {
		return nil, err
	}
	if c.dialTimeout, err = durationParam(q, "dial_timeout", c.dialTimeout); err != nil {
		return nil, err
	}
	ping, err := durationParam(q, "ping_interval", 10*time.Second)
	if err != nil {
		return nil, err
	}
	reconnectWait, err := durationParam(q, "reconnect_wait", time.Second)
	if err != nil {
		return nil, err
	}

	var servers []string
	for _, h := range strings.Split(u.Host, ",") {
		if h == "" {
			return nil, fmt.Errorf("store/nats: empty server address in %q", u.Host)
		}
		s := url.URL{Scheme: "nats", User: user, Host: h}
		servers = append(servers, s.String())
	}
	c.servers = strings.Join(servers, ",")
	c.options = []natsgo.Option{
		natsgo.Name("leasehold"),
		natsgo.Timeout(c.dialTimeout),
		natsgo.MaxReconnects(-1),
		natsgo.ReconnectWait(reconnectWait),
		// A write buffered while disconnected would land after its caller gave up on it.
		natsgo.ReconnectBufSize(-1),
		natsgo.PingInterval(ping),
		natsgo.MaxPingsOutstanding(2),
		// The default handler prints asynchronous errors to stderr; the store has no
		// subscriptions, and reports its errors to its callers.
		natsgo.ErrorHandler(func(*natsgo.Conn, *natsgo.Subscription, error) {}),
	}
	c.options = append(c.options, security...)
	return c, nil
}

// parseBucketParams reads the bucket's replicas and storage.
func (c *config) parseBucketParams(q url.Values) error {
	if v := q.Get("replicas"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 5 {
			return fmt.Errorf("store/nats: URL parameter \"replicas\": %q is not a number from 1 to 5", v)
		}
		c.bucket.Replicas = n
	}
	switch v := q.Get("storage"); v {
	case "", "file":
	case "memory":
		c.bucket.Storage = jetstream.MemoryStorage
	default:
		return fmt.Errorf("store/nats: URL parameter \"storage\": %q is not file or memory", v)
	}
	return nil
}

func validBucket(b string) bool {
	if b == "" {
		return false
	}
	for _, r := range b {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func boolParam(q url.Values, name string, def bool) (bool, error) {
	switch v := strings.ToLower(q.Get(name)); v {
	case "":
		return def, nil
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	default:
		return false, fmt.Errorf("store/nats: URL parameter %q: %q is not true or false", name, v)
	}
}

func durationParam(q url.Values, name string, def time.Duration) (time.Duration, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("store/nats: URL parameter %q: %q is not a duration such as \"5s\"", name, v)
	}
	return d, nil
}

// scrub returns err, or a copy of its text without the URL's password or token if it quotes it
// (its whole occurrences: see store.MaskSecrets).
func scrub(err error, u *url.URL) error {
	if err == nil || u.User == nil {
		return err
	}
	secret, ok := u.User.Password()
	if !ok {
		secret = u.User.Username() // nats://token@host
	}
	if secret == "" {
		return err
	}
	if msg := err.Error(); strings.Contains(msg, secret) {
		return errors.New(store.MaskSecrets(msg, []string{secret}))
	}
	return err
}
