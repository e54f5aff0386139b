package postgres

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasehold/leasehold/store/driver"
)

// DefaultTable is the table used when the URL has no table parameter.
const DefaultTable = "leasehold_registry"

// defaultConnectTimeout bounds a connection attempt when the URL sets no connect_timeout: without
// it, a host that drops packets would hold Open until the operating system gives up.
const defaultConnectTimeout = 10 * time.Second

// checkAfterIdle: a pooled connection idle for longer is checked before use, and replaced when
// the server has ended it. A server that restarted ends every session (FATAL 57P01), and the
// pool does not notice until it uses a connection: the write sent on it would fail, and a
// write is never resent (T7). No restart completes sooner than this after the shutdown, so a
// connection idle for less was used since the server last came up, or the server is still
// down and any connection fails. pgxpool pings only after a second idle, longer than a fast
// restart.
const checkAfterIdle = 100 * time.Millisecond

// shouldPing is the pool's ShouldPing: pgxpool's own rule (a ping after a second idle), and,
// after checkAfterIdle, a look at what the server sent (PgConn.CheckConn: a read of at most a
// millisecond, no round trip) that finds a session the server ended; the ping that follows
// then fails, and the pool takes another connection. A ping on every use after 100 ms would
// cost a round trip, and a ping cut by a short deadline closes a healthy connection.
func shouldPing(_ context.Context, p pgxpool.ShouldPingParams) bool {
	if p.IdleDuration > time.Second {
		return true
	}
	return p.IdleDuration > checkAfterIdle && p.Conn.PgConn().CheckConn() != nil
}

// pgxParams are the URL parameters the store hands to pgx: libpq's connection parameters that
// pgx reads, pgx's and pgxpool's own, and the server settings most often given in a URL. Any
// other parameter is refused, naming it: pgx would send it to the server as a setting, which
// would refuse the connection (unrecognized configuration parameter), or take a misspelled
// sslmode for a setting and connect without TLS. Other server settings go in options, as
// "-c name=value".
var pgxParams = []string{
	// libpq's connection parameters.
	"host", "port", "dbname", "database", "user", "passfile", "connect_timeout", "sslmode", "sslkey", "sslcert",
	"sslcertmode", "sslrootcert", "sslnegotiation", "sslpassword", "sslsni", "krbspn", "krbsrvname",
	"target_session_attrs", "service", "servicefile", "min_protocol_version", "max_protocol_version",
	"channel_binding", "require_auth",
	// pgx's and pgxpool's.
	"statement_cache_capacity", "description_cache_capacity", "default_query_exec_mode",
	"pool_max_conns", "pool_min_conns", "pool_min_idle_conns", "pool_max_conn_lifetime",
	"pool_max_conn_lifetime_jitter", "pool_max_conn_idle_time", "pool_health_check_period", "pool_ping_timeout",
	// Server settings.
	"application_name", "search_path", "options", "timezone", "client_encoding", "statement_timeout",
	"lock_timeout", "idle_in_transaction_session_timeout",
}

// knownParams are every URL parameter the store takes: its own, and pgx's.
func knownParams() []string {
	return append([]string{"table", "password", driver.PasswordFileParam, notifyParam}, pgxParams...)
}

// parseURL turns a postgres:// URL into a pgxpool configuration and the table name. The
// password is kept out of the string pgx parses, so that no parse error can quote it.
func parseURL(u *url.URL) (*pgxpool.Config, string, error) {
	switch strings.ToLower(u.Scheme) {
	case "postgres", "postgresql":
	default:
		return nil, "", fmt.Errorf("scheme %q is not postgres or postgresql", u.Scheme)
	}
	q := u.Query()
	// 63: PostgreSQL's NAMEDATALEN - 1.
	table := driver.TakeParam(q, "table", DefaultTable)
	if err := driver.CheckTableName(table, 63); err != nil {
		return nil, "", err
	}
	password, hasPassword := "", false
	if u.User != nil {
		password, hasPassword = u.User.Password()
	}
	if q.Has("password") {
		password, hasPassword = q.Get("password"), true
		q.Del("password")
	}
	if p, ok, err := driver.TakeSecretFile(q, driver.PasswordFileParam); err != nil {
		return nil, "", err
	} else if ok {
		if hasPassword {
			return nil, "", fmt.Errorf("the URL has a password and the URL parameter %q: give one of them", driver.PasswordFileParam)
		}
		password, hasPassword = p, true
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if !slices.Contains(pgxParams, k) {
			return nil, "", fmt.Errorf("unknown URL parameter %q (known: %s; other server settings go in options, as -c name=value)",
				k, strings.Join(knownParams(), ", "))
		}
	}
	c := *u
	if u.User != nil {
		c.User = url.User(u.User.Username())
	}
	c.RawQuery = q.Encode()
	cfg, err := pgxpool.ParseConfig(c.String())
	if err != nil {
		return nil, "", err
	}
	if hasPassword {
		cfg.ConnConfig.Password = password
	}
	if !q.Has("connect_timeout") {
		cfg.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	cfg.ShouldPing = shouldPing
	return cfg, table, nil
}
