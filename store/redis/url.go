package redis

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// settings is what a store URL says: the options of a client of one server (redis://,
// rediss://), of a client that asks Sentinels for the primary (redis+sentinel://,
// rediss+sentinel://) or of a client of a Redis Cluster (redis+cluster://, rediss+cluster://),
// the key prefix, and the replicas each write waits for.
type settings struct {
	opts     *goredis.Options         // nil with Sentinels or a cluster
	failover *goredis.FailoverOptions // nil without Sentinels
	cluster  *goredis.ClusterOptions  // nil without a cluster
	prefix   string
	wait     waitRule
}

// Sentinel schemes, and the port a Sentinel host without one has.
const (
	sentinelScheme    = "redis+sentinel"
	sentinelTLSScheme = "rediss+sentinel"
	sentinelPort      = "26379"
)

// parseURL reads a store URL. Its errors never hold the URL's password.
func parseURL(u *url.URL) (*settings, error) {
	switch strings.ToLower(u.Scheme) {
	case "redis", "rediss":
		if strings.Contains(u.Host, ",") {
			return nil, fmt.Errorf("store/redis: a %s:// URL names one server; for Redis behind Sentinel name the Sentinels with %s://host:26379,host:26379/0?master=<name>, for Redis Cluster some of its nodes with %s://host:6379,host:6379", u.Scheme, sentinelScheme, clusterScheme)
		}
		opts, prefix, wait, err := parseOne(u, knownParams())
		if err != nil {
			return nil, err
		}
		return &settings{opts: opts, prefix: prefix, wait: wait}, nil
	case sentinelScheme, sentinelTLSScheme:
		return parseSentinel(u)
	case clusterScheme, clusterTLSScheme:
		return parseCluster(u)
	}
	return nil, fmt.Errorf("store/redis: URL scheme %q is not redis, rediss, %s, %s, %s or %s", u.Scheme, sentinelScheme, sentinelTLSScheme, clusterScheme, clusterTLSScheme)
}

// parseOptions turns a redis:// or rediss:// URL into go-redis options and the key prefix.
func parseOptions(u *url.URL) (*goredis.Options, string, error) {
	opts, prefix, _, err := parseOne(u, knownParams())
	return opts, prefix, err
}

// parseOne reads a redis:// or rediss:// URL, refusing any parameter not in known.
func parseOne(u *url.URL, known []string) (*goredis.Options, string, waitRule, error) {
	scheme := strings.ToLower(u.Scheme)
	if scheme != "redis" && scheme != "rediss" {
		return nil, "", waitRule{}, fmt.Errorf("store/redis: URL scheme %q is not redis or rediss", u.Scheme)
	}
	q := u.Query()
	prefix := driver.TakeParam(q, "prefix", DefaultPrefix)
	wait, err := takeWait(q)
	if err != nil {
		return nil, "", waitRule{}, err
	}
	sec, err := takeSecurity(u, q)
	if err != nil {
		return nil, "", waitRule{}, err
	}
	if err := takeRetries(q); err != nil {
		return nil, "", waitRule{}, err
	}
	if err := refuseUnknown(q, known); err != nil {
		return nil, "", waitRule{}, err
	}
	c := *u
	c.Scheme = scheme
	c.RawQuery = q.Encode()
	opts, err := goredis.ParseURL(c.String())
	if err != nil {
		return nil, "", waitRule{}, fmt.Errorf("store/redis: %w", store.RedactError(err, u))
	}
	sec.apply(opts)
	setOptions(opts)
	if err := wait.fits(opts.ReadTimeout); err != nil {
		return nil, "", waitRule{}, err
	}
	return opts, prefix, wait, nil
}

// setOptions sets what the store needs of every client, whatever the URL says.
func setOptions(opts *goredis.Options) {
	// A lease's deadline must bound every call, including the time spent on a dead connection.
	opts.ContextTimeoutEnabled = true
	// The handshake for maintenance notifications fails on servers without them and go-redis
	// logs that; nothing here uses them.
	opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	// go-redis sends a command again after its connection failed, even one the server ran: a
	// conditional write would then answer that its condition failed, false (T7). The Elector
	// retries every R itself.
	opts.MaxRetries = -1
	if opts.DialTimeout == 0 {
		opts.DialTimeout = 5 * time.Second
	}
}

// refuseUnknown returns an error naming a parameter of q not in known.
func refuseUnknown(q url.Values, known []string) error {
	for k := range q {
		if !slices.Contains(known, k) {
			// go-redis names an unknown option but not the known ones: say them all here.
			return fmt.Errorf("store/redis: unknown URL parameter %q (known: %s)", k, strings.Join(known, ", "))
		}
	}
	return nil
}

// ownParams are the URL parameters this package reads; goRedisParams, those it leaves to
// go-redis's ParseURL (of the version in go.mod), which refuses any other.
var (
	ownParams     = []string{"prefix", "tls", "ca", "cert", "key", "servername", "password_file", "max_retries", "wait_replicas", "wait_timeout"}
	goRedisParams = []string{
		"db", "protocol", "client_name", "dial_timeout", "read_timeout", "write_timeout", "pool_fifo",
		"pool_size", "pool_timeout", "min_idle_conns", "max_idle_conns", "max_active_conns",
		"max_concurrent_dials", "conn_max_idle_time", "conn_max_lifetime", "conn_max_lifetime_jitter",
		"idle_timeout", "max_conn_age", "min_retry_backoff", "max_retry_backoff", "skip_verify",
	}
)

func knownParams() []string { return slices.Concat(ownParams, goRedisParams) }

// takeRetries removes max_retries, which may only say what the store does anyway: no retries
// (0 is go-redis's default of 3 once parsed, but a user writing it means none).
func takeRetries(q url.Values) error {
	if !q.Has("max_retries") {
		return nil
	}
	v := q.Get("max_retries")
	q.Del("max_retries")
	if v != "0" && v != "-1" {
		return fmt.Errorf("store/redis: URL parameter \"max_retries\" is %q: a write sent again after its connection failed may have run already, and its second answer would be false; the store never retries (leave the parameter out), the election tries again every renew interval", v)
	}
	return nil
}
