package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Redis Cluster. The URL names some of the cluster's nodes (startup nodes), not a Sentinel:
//
//	redis+cluster://[[user]:password@]host:port[,host:port...][/0][?param=value...]
//	rediss+cluster://...   (TLS to every node)
//
// A scheme of its own rather than a parameter of redis://, as for Sentinel, so that the form of
// the host list says what it is: one server (redis://), the Sentinels (redis+sentinel://), or
// startup nodes of a cluster (redis+cluster://), from which go-redis's cluster client learns every
// shard (CLUSTER SLOTS) and follows the slots as they move (MOVED, ASK) and as a shard's
// replica takes over from its primary.
//
// Every Redis key of a record holds the record's key in a hash tag, prefix + "{" + key + "}",
// and its watch channel is a sharded channel (SSUBSCRIBE, SPUBLISH: Redis 7.0 or later) named
// as the key itself, so the key and its channel are always in one slot: the scripts touch one
// slot, and the watch listens on the shard that owns it. (Channels and keys are separate name
// spaces; a channel named "watch:" + the key would hash elsewhere for a tag Redis reads as
// empty, a key starting with "}".)

// Cluster schemes, and the port of a startup node written without one.
const (
	clusterScheme    = "redis+cluster"
	clusterTLSScheme = "rediss+cluster"
	clusterPort      = "6379"
)

// parseCluster reads a redis+cluster:// or rediss+cluster:// URL.
func parseCluster(u *url.URL) (*settings, error) {
	q := u.Query()
	if tls := strings.ToLower(q.Get("tls")); strings.EqualFold(u.Scheme, clusterTLSScheme) && (tls == "false" || tls == "0") {
		return nil, fmt.Errorf("store/redis: URL parameter \"tls\" is false, but the scheme %s is TLS", clusterTLSScheme)
	}
	if q.Has("db") {
		return nil, errors.New("store/redis: URL parameter \"db\": Redis Cluster has database 0 only")
	}
	if db := strings.Trim(u.Path, "/"); db != "" && db != "0" {
		return nil, fmt.Errorf("store/redis: the URL's path names database %q: Redis Cluster has database 0 only", db)
	}
	addrs, err := clusterAddrs(u.Host)
	if err != nil {
		return nil, err
	}
	one := *u
	one.Scheme = "redis"
	if strings.EqualFold(u.Scheme, clusterTLSScheme) {
		one.Scheme = "rediss"
	}
	one.Host = addrs[0]
	one.Path = ""
	one.RawPath = ""
	opts, prefix, wait, err := parseOne(&one, knownParams())
	if err != nil {
		return nil, err
	}
	if opts.TLSConfig != nil && opts.TLSConfig.ServerName == addrHost(addrs[0]) && !q.Has("servername") {
		// go-redis took the first startup node's name: each node is checked for its own instead.
		opts.TLSConfig.ServerName = ""
	}
	return &settings{cluster: clusterOptions(opts, addrs), prefix: prefix, wait: wait}, nil
}

// clusterAddrs splits the URL's startup nodes; a host without a port has Redis's.
func clusterAddrs(hosts string) ([]string, error) {
	var addrs []string
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			return nil, fmt.Errorf("store/redis: the cluster's node list %q has an empty host", hosts)
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			host, port = strings.Trim(h, "[]"), clusterPort
		}
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 || host == "" {
			return nil, fmt.Errorf("store/redis: cluster node %q is not host:port", h)
		}
		addrs = append(addrs, net.JoinHostPort(host, port))
	}
	return addrs, nil
}

// clusterOptions carries the options of a client of one server over to a cluster client.
func clusterOptions(o *goredis.Options, addrs []string) *goredis.ClusterOptions {
	return &goredis.ClusterOptions{
		Addrs: addrs,

		ClientName: o.ClientName,
		Protocol:   o.Protocol,
		Username:   o.Username,
		Password:   o.Password,

		// Redirections (MOVED, ASK) are followed: the command did not run. The errors of a
		// connection are not, by MaxRetries here, and by noRetry (below) in the cluster
		// client's own loop, which shares its attempts with redirections.
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

		TLSConfig:                o.TLSConfig,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
}

// noRetry is a command the cluster client must not send again after its connection failed:
// a script that may have run. go-redis's cluster client retries such a command (once on the
// same node, then on another) in the loop that follows MOVED and ASK, whatever MaxRetries says;
// it does not for a command that reports NoRetry.
type noRetry struct{ *goredis.Cmd }

func (noRetry) NoRetry() bool { return true }

// clusterKey is the Redis key of a record in a cluster: its key in a hash tag, so that the
// record's key and its channel (the same name) are in one slot.
func clusterKey(prefix, key string) string { return prefix + "{" + key + "}" }

// clusterScript is the variant of a script for a cluster: it publishes on the sharded channel
// named as the key, SPUBLISH instead of PUBLISH on "watch:" and the key.
func clusterScript(src string) string {
	src = strings.ReplaceAll(src, "'watch:' .. KEYS[1]", "KEYS[1]")
	return strings.ReplaceAll(src, "'PUBLISH'", "'SPUBLISH'")
}

// nodeFor returns the address of the primary that owns rkey's slot, as the client knows it,
// and a client of it; "" and nil for a store that is not on a cluster. The watches of keys of
// one primary share a connection to it.
func (s *backend) nodeFor(ctx context.Context, rkey string) (string, *goredis.Client, error) {
	cc, ok := s.client.(*goredis.ClusterClient)
	if !ok {
		return "", nil, nil
	}
	c, err := cc.MasterForKey(ctx, rkey)
	if err != nil {
		return "", nil, fmt.Errorf("store/redis: the node of key %q: %w", rkey, err)
	}
	return c.Options().Addr, c, nil
}
