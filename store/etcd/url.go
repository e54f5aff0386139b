package etcd

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/leasehold/leasehold/store/driver"
)

// DefaultPrefix is the key prefix used when the URL has no prefix parameter.
const DefaultPrefix = "leasehold/"

var knownParams = append([]string{"prefix", "dial_timeout", "keepalive", "keepalive_timeout", driver.PasswordFileParam}, driver.TLSParams...)

// parseConfig turns a store URL into a client configuration and the key prefix. Its errors
// never hold the URL's password.
func parseConfig(u *url.URL) (clientv3.Config, string, error) {
	var cfg clientv3.Config
	if !strings.EqualFold(u.Scheme, "etcd") {
		return cfg, "", fmt.Errorf("store/etcd: URL scheme %q is not etcd", u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" {
		return cfg, "", errors.New("store/etcd: the URL names no server (etcd://host:port[,host:port])")
	}
	if u.Path != "" && u.Path != "/" {
		return cfg, "", fmt.Errorf("store/etcd: unexpected path %q in the URL (use the prefix parameter)", u.Path)
	}
	q := u.Query()
	for k := range q {
		if !slices.Contains(knownParams, k) {
			return cfg, "", fmt.Errorf("store/etcd: unknown URL parameter %q (known: %s)", k, strings.Join(knownParams, ", "))
		}
	}
	prefix := driver.TakeParam(q, "prefix", DefaultPrefix)
	tlsConfig, err := driver.TakeTLS(q)
	if err != nil {
		return cfg, "", fmt.Errorf("store/etcd: %w", err)
	}
	password, hasPassword, err := driver.TakePassword(u, q, true)
	if err != nil {
		return cfg, "", fmt.Errorf("store/etcd: %w", err)
	}
	durations := map[string]*time.Duration{
		"dial_timeout":      &cfg.DialTimeout,
		"keepalive":         &cfg.DialKeepAliveTime,
		"keepalive_timeout": &cfg.DialKeepAliveTimeout,
	}
	cfg.DialTimeout = 5 * time.Second
	cfg.DialKeepAliveTime = 10 * time.Second
	cfg.DialKeepAliveTimeout = 3 * time.Second
	for name, d := range durations {
		if v := q.Get(name); v != "" {
			x, err := time.ParseDuration(v)
			if err != nil || x < 0 {
				return cfg, "", fmt.Errorf("store/etcd: URL parameter %q: %q is not a duration such as \"5s\"", name, v)
			}
			*d = x
		}
	}
	if err := checkKeepalive(cfg.DialKeepAliveTime); err != nil {
		return cfg, "", err
	}
	scheme := "http://"
	if tlsConfig != nil {
		scheme = "https://"
		cfg.TLS = tlsConfig
		// gRPC verifies the name of the endpoint it dials, whatever ServerName says.
		driver.VerifyServerNameItself(cfg.TLS)
	}
	for _, h := range strings.Split(u.Host, ",") {
		if h == "" {
			return cfg, "", fmt.Errorf("store/etcd: empty server address in %q", u.Host)
		}
		cfg.Endpoints = append(cfg.Endpoints, scheme+h)
	}
	if u.User != nil {
		cfg.Username = u.User.Username()
	}
	if hasPassword {
		cfg.Password = password
	}
	// The client logs endpoints and errors; the store returns the errors instead.
	cfg.Logger = zap.NewNop()
	// Keepalive pings only while a call is pending (see keepalive.go).
	cfg.PermitWithoutStream = false
	// gRPC's default reconnection backoff grows to two minutes: after a long partition, a lease
	// holder would stay away from a healed cluster for that long.
	cfg.DialOptions = []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
		MinConnectTimeout: cfg.DialTimeout,
	})}
	return cfg, prefix, nil
}
