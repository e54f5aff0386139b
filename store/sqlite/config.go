package sqlite

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold/leasehold/store/driver"
)

// DefaultTable is the table used when the URL has no table parameter.
const DefaultTable = "leasehold_registry"

type config struct {
	path        string
	table       string
	busyTimeout time.Duration
	synchronous string
	maxOpen     int
	readOnly    bool // mode=ro
}

// parseURL reads a sqlite:///absolute/path URL.
func parseURL(u *url.URL) (*config, error) {
	if !strings.EqualFold(u.Scheme, "sqlite") {
		return nil, fmt.Errorf("scheme %q is not sqlite", u.Scheme)
	}
	if u.Host != "" || u.Opaque != "" {
		return nil, fmt.Errorf("the path must be absolute, after three slashes: sqlite:///path/to/file.db")
	}
	c := &config{path: u.Path, table: DefaultTable, busyTimeout: 5 * time.Second, synchronous: "FULL", maxOpen: 1}
	if !filepath.IsAbs(c.path) {
		return nil, fmt.Errorf("the path must be absolute, after three slashes: sqlite:///path/to/file.db")
	}
	if strings.ContainsAny(c.path, "?#") {
		return nil, fmt.Errorf("path %q: '?' and '#' are not supported in the file's path", c.path)
	}
	q := u.Query()
	for name := range q {
		switch name {
		case "table", "busy_timeout", "synchronous", "max_open_conns", "mode":
		default:
			return nil, fmt.Errorf("unknown parameter %q (known: table, busy_timeout, synchronous, max_open_conns, mode)", name)
		}
	}
	c.table = driver.TakeParam(q, "table", c.table)
	if err := driver.CheckTableName(c.table, 64); err != nil { // as MySQL's: SQLite has no limit
		return nil, err
	}
	if v := q.Get("busy_timeout"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			ms, merr := strconv.Atoi(v)
			if merr != nil {
				return nil, fmt.Errorf("parameter busy_timeout: %q is not a duration (\"5s\") or a number of milliseconds", v)
			}
			d = time.Duration(ms) * time.Millisecond
		}
		if d < 0 {
			return nil, fmt.Errorf("parameter busy_timeout: %q is negative", v)
		}
		c.busyTimeout = d
	}
	if v := q.Get("synchronous"); v != "" {
		switch strings.ToUpper(v) {
		case "FULL", "NORMAL":
			c.synchronous = strings.ToUpper(v)
		default:
			return nil, fmt.Errorf("parameter synchronous: %q is not FULL or NORMAL", v)
		}
	}
	if v := q.Get("max_open_conns"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("parameter max_open_conns: %q is not a positive integer", v)
		}
		c.maxOpen = n
	}
	switch v := q.Get("mode"); v {
	case "", "rwc":
	case "ro":
		c.readOnly = true
	default:
		return nil, fmt.Errorf("parameter mode: %q is not ro or rwc", v)
	}
	return c, nil
}

// dsn is the driver's data source name: the path, and the pragmas run on every connection
// (busy_timeout first, so that switching to WAL waits for other processes' locks). SQLite itself
// waits at most sqliteBusyWait for a lock: the store waits the rest (see retryBusy).
func (c *config) dsn() string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", min(c.busyTimeout, sqliteBusyWait).Milliseconds()))
	if c.readOnly {
		// An SQLite URI: its mode=ro opens the file without creating it and refuses writes.
		// Switching to WAL would be a write; a file that some writer opened is in WAL already.
		q.Add("mode", "ro")
		return "file:" + (&url.URL{Path: c.path}).EscapedPath() + "?" + q.Encode()
	}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+c.synchronous+")")
	return c.path + "?" + q.Encode()
}
