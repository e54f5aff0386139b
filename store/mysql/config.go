package mysql

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leasehold/leasehold/store/driver"
)

// DefaultTable is the table used when the URL has no table parameter.
const DefaultTable = "leasehold_registry"

// poolConfig holds the database/sql pool settings read from the URL.
type poolConfig struct {
	maxOpen, maxIdle         int
	maxLifetime, maxIdleTime time.Duration
}

// config is what Open needs, parsed from the URL.
type config struct {
	driver *mysql.Config
	table  string
	pool   poolConfig
}

// ownParams are the URL parameters the store reads itself (with driver.TLSParams, password and
// password_file), and driverParams those it hands to go-sql-driver/mysql: the driver's own,
// and time_zone, the server setting most often given in a DSN. Any other parameter is refused,
// naming it: the driver would send it to the server as a session variable (SET), which a
// misspelled one makes fail only once connected.
var (
	ownParams    = []string{"table", "max_open_conns", "max_idle_conns", "conn_max_lifetime", "conn_max_idle_time", "socket"}
	driverParams = []string{
		"allowAllFiles", "allowCleartextPasswords", "allowFallbackToPlaintext", "allowNativePasswords",
		"allowOldPasswords", "charset", "checkConnLiveness", "clientFoundRows", "collation", "columnsWithAlias",
		"compress", "connectionAttributes", "interpolateParams", "loc", "maxAllowedPacket", "multiStatements",
		"parseTime", "readTimeout", "rejectReadOnly", "serverPubKey", "timeTruncate", "timeout",
		"writeTimeout", "time_zone",
	}
)

// knownParams are every URL parameter the store takes (the driver's tls among TLSParams).
func knownParams() []string {
	out := append(slices.Clone(ownParams), driver.TLSParams...)
	out = append(out, "password", driver.PasswordFileParam)
	return append(out, driverParams...)
}

// parseURL turns a mysql:// URL into the driver's configuration. The driver parses a DSN built
// without the password, which is set afterwards, so none of its errors can quote it.
func parseURL(u *url.URL) (*config, error) {
	if !strings.EqualFold(u.Scheme, "mysql") {
		return nil, fmt.Errorf("scheme %q is not mysql", u.Scheme)
	}
	q := u.Query()
	c := &config{table: DefaultTable, pool: poolConfig{maxOpen: 8, maxIdle: 8, maxLifetime: 30 * time.Minute, maxIdleTime: 5 * time.Minute}}
	c.table = driver.TakeParam(q, "table", c.table)
	if err := driver.CheckTableName(c.table, 64); err != nil { // MySQL's limit
		return nil, err
	}
	if err := c.pool.parse(q); err != nil {
		return nil, err
	}
	socket := q.Get("socket")
	sec, err := takeSecurity(u, q)
	if err != nil {
		return nil, err
	}
	for _, k := range ownParams {
		q.Del(k)
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if !slices.Contains(driverParams, k) {
			return nil, fmt.Errorf("unknown URL parameter %q (known: %s)", k, strings.Join(knownParams(), ", "))
		}
	}
	_, hasInterpolate := q["interpolateParams"]
	_, hasTimeout := q["timeout"]
	// The driver reads its parameters from a DSN: user and address are set on the result, so
	// only the database name and the parameters go through its parser.
	dsn := "/" + url.PathEscape(strings.TrimPrefix(u.Path, "/"))
	if len(q) > 0 {
		dsn += "?" + q.Encode()
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("driver parameters: %w", err)
	}
	if u.User != nil {
		cfg.User = u.User.Username()
	}
	if sec.hasPassword {
		cfg.Passwd = sec.password
	}
	if sec.tls != nil {
		cfg.TLS, cfg.TLSConfig = sec.tls, ""
	}
	if socket != "" {
		cfg.Net, cfg.Addr = "unix", socket
	} else {
		cfg.Net, cfg.Addr = "tcp", u.Host
		if u.Port() == "" {
			cfg.Addr = strings.TrimSuffix(u.Host, ":") + ":3306"
		}
	}
	if u.Host == "" && socket == "" {
		return nil, fmt.Errorf("no host in the URL (mysql://user:password@host:3306/database)")
	}
	if !hasTimeout {
		cfg.Timeout = 10 * time.Second
	}
	if !hasInterpolate {
		cfg.InterpolateParams = true
	}
	cfg.ClientFoundRows = true
	cfg.Logger = slogLogger{}
	c.driver = cfg
	return c, nil
}

// parse reads the connection pool's parameters.
func (p *poolConfig) parse(q url.Values) error {
	for name, dst := range map[string]*int{"max_open_conns": &p.maxOpen, "max_idle_conns": &p.maxIdle} {
		if q.Has(name) {
			n, err := strconv.Atoi(q.Get(name))
			if err != nil || n < 1 {
				return fmt.Errorf("parameter %s: %q is not a positive integer", name, q.Get(name))
			}
			*dst = n
		}
	}
	for name, dst := range map[string]*time.Duration{"conn_max_lifetime": &p.maxLifetime, "conn_max_idle_time": &p.maxIdleTime} {
		if q.Has(name) {
			d, err := time.ParseDuration(q.Get(name))
			if err != nil || d < 0 {
				return fmt.Errorf("parameter %s: %q is not a duration such as \"5m\"", name, q.Get(name))
			}
			*dst = d
		}
	}
	return nil
}

// slogLogger sends the driver's log lines (a connection found dead, a packet cut short) to
// log/slog at debug level: the operation that met the problem returns it anyway.
type slogLogger struct{}

func (slogLogger) Print(v ...any) {
	slog.Log(context.Background(), slog.LevelDebug, "mysql driver: "+strings.TrimSpace(fmt.Sprint(v...)))
}
