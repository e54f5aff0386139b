package redis

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/leasehold/leasehold/store/driver"
)

// Redis behind Sentinel. The URL names the Sentinels, not the servers:
//
//	redis+sentinel://[[user]:password@]sentinel:26379[,sentinel:26379...][/db]?master=<name>[&...]
//	rediss+sentinel://...   (TLS, to the Sentinels and to the servers)
//
// The client (go-redis's failover client) asks a Sentinel for the primary of master, connects
// to it, and follows it: told of a failover (+switch-master), it closes its connections to the
// old primary, and every new connection goes to the primary a Sentinel names then. The user
// information and password_file are the servers' credentials, as in a redis:// URL; the
// Sentinels' are sentinel_user and sentinel_password_file. The TLS parameters apply to both.
//
// A watch's Pub/Sub connection is not among the connections closed at a failover: it follows
// the primary when its connection fails, which the old primary's death causes, and so does its
// demotion by the Sentinels (they close its clients' connections as they reconfigure it).

// sentinelParams are the parameters of a Sentinel URL beside those of a redis:// URL.
var sentinelParams = []string{"master", "sentinel_user", "sentinel_password_file"}

func parseSentinel(u *url.URL) (*settings, error) {
	q := u.Query()
	master := driver.TakeParam(q, "master", "")
	if master == "" {
		return nil, fmt.Errorf("store/redis: URL parameter \"master\" is missing or empty: a %s URL names the Sentinels, and master the name they monitor the primary by (sentinel monitor <name> ...)", u.Scheme)
	}
	sentinelUser := driver.TakeParam(q, "sentinel_user", "")
	sentinelPassword, hasSentinelPassword, err := driver.TakeSecretFile(q, "sentinel_password_file")
	if err != nil {
		return nil, fmt.Errorf("store/redis: %w", err)
	}
	if sentinelUser != "" && !hasSentinelPassword {
		return nil, errors.New("store/redis: URL parameter \"sentinel_user\" needs \"sentinel_password_file\", the file of its password")
	}
	if tls := strings.ToLower(q.Get("tls")); strings.EqualFold(u.Scheme, sentinelTLSScheme) && (tls == "false" || tls == "0") {
		return nil, fmt.Errorf("store/redis: URL parameter \"tls\" is false, but the scheme %s is TLS", sentinelTLSScheme)
	}
	addrs, err := sentinelAddrs(u.Host)
	if err != nil {
		return nil, err
	}
	// The rest is a redis:// URL's, read as for one: go-redis's parameters, the prefix, the
	// replicas to wait for, TLS and the servers' credentials.
	one := *u
	one.Scheme = "redis"
	if strings.EqualFold(u.Scheme, sentinelTLSScheme) {
		one.Scheme = "rediss"
	}
	one.Host = addrs[0]
	one.RawQuery = q.Encode()
	opts, prefix, wait, err := parseOne(&one, slices.Concat(knownParams(), sentinelParams))
	if err != nil {
		return nil, err
	}
	if opts.TLSConfig != nil && opts.TLSConfig.ServerName == addrHost(addrs[0]) && !q.Has("servername") {
		// go-redis took the first Sentinel's name: each server is checked for its own instead.
		opts.TLSConfig.ServerName = ""
	}
	return &settings{failover: failoverOptions(opts, master, addrs, sentinelUser, sentinelPassword), prefix: prefix, wait: wait}, nil
}

// sentinelAddrs splits the URL's host list; a host without a port has Sentinel's.
func sentinelAddrs(hosts string) ([]string, error) {
	var addrs []string
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			return nil, fmt.Errorf("store/redis: the Sentinel list %q has an empty host", hosts)
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			host, port = strings.Trim(h, "[]"), sentinelPort
		}
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 || host == "" {
			return nil, fmt.Errorf("store/redis: Sentinel %q is not host:port", h)
		}
		addrs = append(addrs, net.JoinHostPort(host, port))
	}
	return addrs, nil
}

func addrHost(addr string) string {
	h, _, _ := net.SplitHostPort(addr)
	return h
}

// failoverOptions carries the options of a client of one server over to a failover client.
func failoverOptions(o *goredis.Options, master string, addrs []string, sentinelUser, sentinelPassword string) *goredis.FailoverOptions {
	return &goredis.FailoverOptions{
		MasterName:       master,
		SentinelAddrs:    addrs,
		SentinelUsername: sentinelUser,
		SentinelPassword: sentinelPassword,

		ClientName: o.ClientName,
		Protocol:   o.Protocol,
		Username:   o.Username,
		Password:   o.Password,
		DB:         o.DB,

		MaxRetries:      o.MaxRetries,
		MinRetryBackoff: o.MinRetryBackoff,
		MaxRetryBackoff: o.MaxRetryBackoff,

		DialTimeout:           o.DialTimeout,
		ReadTimeout:           o.ReadTimeout,
		WriteTimeout:          o.WriteTimeout,
		ContextTimeoutEnabled: o.ContextTimeoutEnabled,

		PoolFIFO:              o.PoolFIFO,
		PoolSize:              o.PoolSize,
		MaxConcurrentDials:    o.MaxConcurrentDials,
		PoolTimeout:           o.PoolTimeout,
		MinIdleConns:          o.MinIdleConns,
		MaxIdleConns:          o.MaxIdleConns,
		MaxActiveConns:        o.MaxActiveConns,
		ConnMaxIdleTime:       o.ConnMaxIdleTime,
		ConnMaxLifetime:       o.ConnMaxLifetime,
		ConnMaxLifetimeJitter: o.ConnMaxLifetimeJitter,

		TLSConfig: o.TLSConfig,
	}
}

// newClient returns the client the settings describe.
func (s *settings) newClient() goredis.UniversalClient {
	if s.cluster != nil {
		return goredis.NewClusterClient(s.cluster)
	}
	if s.failover != nil {
		return goredis.NewFailoverClient(s.failover)
	}
	return goredis.NewClient(s.opts)
}

// target names what the client connects to, for errors: the server, the primary and its
// Sentinels, or the cluster's startup nodes.
func (s *settings) target() string {
	if s.cluster != nil {
		return "the Redis Cluster of " + strings.Join(s.cluster.Addrs, ",")
	}
	if s.failover != nil {
		return fmt.Sprintf("the primary %q via the Sentinels %s", s.failover.MasterName, strings.Join(s.failover.SentinelAddrs, ","))
	}
	return s.opts.Addr
}

// probeAddr is the address whose TLS handshake explains a TLS failure: the server, the first
// Sentinel, or the first startup node.
func (s *settings) probeAddr() string {
	if s.cluster != nil {
		return s.cluster.Addrs[0]
	}
	if s.failover != nil {
		return s.failover.SentinelAddrs[0]
	}
	return s.opts.Addr
}

// poolSize is the number of connections the client keeps to one server (to each node of a
// cluster), go-redis's default when the URL says none.
func (s *settings) poolSize() int {
	n := 0
	switch {
	case s.cluster != nil:
		n = s.cluster.PoolSize
	case s.failover != nil:
		n = s.failover.PoolSize
	default:
		n = s.opts.PoolSize
	}
	if n <= 0 {
		n = 10 * runtime.GOMAXPROCS(0)
	}
	return n
}

// tlsConfig is the client's TLS configuration (nil without TLS).
func (s *settings) tlsConfig() *tls.Config {
	switch {
	case s.cluster != nil:
		return s.cluster.TLSConfig
	case s.failover != nil:
		return s.failover.TLSConfig
	}
	return s.opts.TLSConfig
}
