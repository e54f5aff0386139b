package postgres

import (
	"fmt"
	"net/url"
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
	return cfg, table, nil
}
