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

// parseOptions turns a store URL into go-redis options and the key prefix. Its errors never
// hold the URL's password.
func parseOptions(u *url.URL) (*goredis.Options, string, error) {
	scheme := strings.ToLower(u.Scheme)
	if scheme != "redis" && scheme != "rediss" {
		return nil, "", fmt.Errorf("store/redis: URL scheme %q is not redis or rediss", u.Scheme)
	}
	q := u.Query()
	prefix := driver.TakeParam(q, "prefix", DefaultPrefix)
	sec, err := takeSecurity(u, q)
	if err != nil {
		return nil, "", err
	}
	if err := takeRetries(q); err != nil {
		return nil, "", err
	}
	for k := range q {
		if !slices.Contains(goRedisParams, k) {
			// go-redis names an unknown option but not the known ones: say them all here.
			return nil, "", fmt.Errorf("store/redis: unknown URL parameter %q (known: %s)", k, strings.Join(knownParams(), ", "))
		}
	}
	c := *u
	c.Scheme = scheme
	c.RawQuery = q.Encode()
	opts, err := goredis.ParseURL(c.String())
	if err != nil {
		return nil, "", fmt.Errorf("store/redis: %w", store.RedactError(err, u))
	}
	sec.apply(opts)
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
	return opts, prefix, nil
}

// ownParams are the URL parameters this package reads; goRedisParams, those it leaves to
// go-redis's ParseURL (of the version in go.mod), which refuses any other.
var (
	ownParams     = []string{"prefix", "tls", "ca", "cert", "key", "servername", "password_file", "max_retries"}
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
