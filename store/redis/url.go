package redis

import (
	"fmt"
	"net/url"
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
	if opts.DialTimeout == 0 {
		opts.DialTimeout = 5 * time.Second
	}
	return opts, prefix, nil
}
