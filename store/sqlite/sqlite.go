package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"modernc.org/sqlite"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// ServiceType is the service type configurations name to open a [Store] from the parameters
// url and table (see the package documentation).
const ServiceType = "Webda/SQLiteStore"

func init() {
	store.Register(store.Backend{
		Schemes:     []string{"sqlite"},
		Open:        driver.Opener(openURL),
		ServiceType: ServiceType,
		Example:     "sqlite:///absolute/path.db",
		Params:      []string{"table"},
	})
}

// Store is a store.Store kept in one table of an SQLite file. It is safe for concurrent use,
// also by other processes opening the same file; Close releases the file.
type Store struct {
	*driver.Portable
	b *backend
}

// backend is the driver.Driver behind Store.
type backend struct {
	db       *sql.DB
	busy     time.Duration // the URL's busy_timeout, see retryBusy
	path     string
	table    string
	q        queries
	readOnly bool // mode=ro: the file and the table are never created, nothing is written

	watch watchState // the watches' inotify hub (watch_linux.go)
}

type queries struct {
	get, create, patch, del, delIf string
}

func newQueries(table string) queries {
	t := `"` + table + `"`
	return queries{
		get:    `SELECT doc FROM ` + t + ` WHERE id = ?`,
		create: `INSERT INTO ` + t + ` (id, doc) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`,
		// leasehold_doc_matches with a NULL field only checks that the row is an object.
		patch: `UPDATE ` + t + ` SET doc = leasehold_doc_patch(doc, ?) WHERE id = ? AND leasehold_doc_matches(doc, ?, ?)`,
		del:   `DELETE FROM ` + t + ` WHERE id = ?`,
		delIf: `DELETE FROM ` + t + ` WHERE id = ? AND leasehold_doc_matches(doc, ?, ?)`,
	}
}

// Open opens (creating it if needed) the SQLite file named by rawURL, sqlite:///absolute/path,
// and creates the table if it is missing. The URL's parameters are described in the package
// documentation.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	return driver.OpenWith(ctx, "sqlite", rawURL, openURL)
}

// CheckURL reports what Open would find wrong with rawURL's form and parameters, without
// opening (and so creating) the database: for a tool that only reads, and must not create a
// file that does not exist, yet must refuse a URL that Open would refuse.
func CheckURL(rawURL string) error {
	u, err := store.ParseURL(rawURL)
	if err != nil {
		return err
	}
	_, err = parseURL(u)
	return err
}

func openURL(ctx context.Context, u *url.URL) (s *Store, err error) {
	// A local file has no server to wait for: every error opening it is the configuration's
	// (a missing directory, a file that is not a database, no permission).
	defer func() { err = store.ConfigError(err) }()
	return openFile(ctx, u)
}

func openFile(ctx context.Context, u *url.URL) (*Store, error) {
	c, err := parseURL(u)
	if err != nil {
		return nil, store.ConfigError(err)
	}
	db, err := sql.Open("sqlite", c.dsn())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(c.maxOpen)
	db.SetMaxIdleConns(c.maxOpen)
	s := &backend{db: db, busy: c.busyTimeout, path: c.path, table: c.table, q: newQueries(c.table), readOnly: c.readOnly}
	// The first connection switches the file to WAL mode, taking the write lock (and failing on
	// a file that is not a database or cannot be opened).
	if err := retryBusy(ctx, s.busy, func() error { return db.PingContext(ctx) }); err != nil {
		db.Close()
		return nil, err
	}
	if c.readOnly {
		return &Store{Portable: driver.New(s), b: s}, nil
	}
	// CREATE TABLE IF NOT EXISTS takes SQLite's write lock, so creators in several processes
	// run one after the other (waiting up to busy_timeout) and all but the first do nothing.
	_, err = s.exec(ctx, `CREATE TABLE IF NOT EXISTS "`+c.table+`" (id TEXT NOT NULL PRIMARY KEY, doc TEXT NOT NULL)`)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("create table %s: %w", c.table, err)
	}
	return &Store{Portable: driver.New(s), b: s}, nil
}

// exec runs one statement, again while it fails with SQLITE_BUSY (see retryBusy).
func (s *backend) exec(ctx context.Context, stmt string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := retryBusy(ctx, s.busy, func() error {
		var err error
		res, err = s.db.ExecContext(ctx, stmt, args...)
		return err
	})
	return res, err
}

// Close closes the store's connections.
func (s *backend) Close() error {
	s.closeWatches()
	return s.db.Close()
}

// Table returns the name of the store's table.
func (s *Store) Table() string { return s.b.table }

// Path returns the database file's path.
func (s *Store) Path() string { return s.b.path }

func (s *backend) Get(ctx context.Context, key string) (map[string]any, error) {
	doc, err := s.get(ctx, key)
	return doc, s.explain(ctx, err)
}

func (s *backend) get(ctx context.Context, key string) (map[string]any, error) {
	var raw string
	err := retryBusy(ctx, s.busy, func() error { return s.db.QueryRowContext(ctx, s.q.get, key).Scan(&raw) })
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil && s.readOnly && s.tableMissing(ctx) {
		return nil, store.ErrNotFound // read-only, the table nobody has written yet is not created
	}
	if err != nil {
		return nil, err
	}
	return driver.DecodeRow("sqlite", s.table, []byte(raw))
}

// tableMissing reports whether the database says it has no such table (not when it cannot
// be asked).
func (s *backend) tableMissing(ctx context.Context) bool {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, s.table).Scan(&n)
	return err == nil && n == 0
}

// errReadOnly is the error of a write to a store opened with mode=ro.
var errReadOnly = errors.New("the store is opened read-only (mode=ro)")

// Create uses INSERT ... ON CONFLICT DO NOTHING: it never overwrites, and of concurrent
// creators, in this process or others, exactly one inserts a row.
func (s *backend) Create(ctx context.Context, key string, doc map[string]any) error {
	if s.readOnly {
		return errReadOnly
	}
	b, err := encodeJSON(doc)
	if err != nil {
		return err
	}
	n, err := driver.RowsAffected(s.exec(ctx, s.q.create, key, b))
	return driver.Inserted(n, s.explain(ctx, err))
}

// Patch is one UPDATE whose WHERE clause carries the condition, so the check and the write are
// one atomic step under SQLite's write lock. When it changes no row, driver.WriteOrExplain
// tells why.
func (s *backend) Patch(ctx context.Context, key string, fields map[string]any, cond *driver.Condition) error {
	b, err := encodeJSON(fields)
	if err != nil {
		return err
	}
	field, want, err := encodeCondition(cond)
	if err != nil {
		return err
	}
	return s.write(ctx, key, cond, s.q.patch, b, key, field, want)
}

// Delete is one DELETE, under the same rules as Patch.
func (s *backend) Delete(ctx context.Context, key string, cond *driver.Condition) error {
	if cond == nil {
		return s.write(ctx, key, cond, s.q.del, key)
	}
	field, want, err := encodeCondition(cond)
	if err != nil {
		return err
	}
	return s.write(ctx, key, cond, s.q.delIf, key, field, want)
}

// write runs a conditional Patch or Delete statement; see driver.WriteOrExplain for what it does
// when the statement changes no row.
func (s *backend) write(ctx context.Context, key string, cond *driver.Condition, stmt string, args ...any) error {
	if s.readOnly {
		return errReadOnly
	}
	return driver.WriteOrExplain(cond,
		func() (int64, error) { return driver.RowsAffected(s.exec(ctx, stmt, args...)) },
		func() (map[string]any, error) { return s.get(ctx, key) },
		func(err error) error { return s.explain(ctx, err) })
}

// explain adds the context's error and the table to err (see driver.TableError).
func (s *backend) explain(ctx context.Context, err error) error {
	return driver.TableError[*sqlite.Error](ctx, err, "sqlite", s.table)
}

func encodeJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("%w: %v", store.ErrInvalid, err)
	}
	return string(b), nil
}

// encodeCondition returns the field and the value's JSON for leasehold_doc_matches: a nil field
// (SQL NULL) without a condition.
func encodeCondition(cond *driver.Condition) (field, want any, err error) {
	if cond == nil {
		return nil, nil, nil
	}
	b, err := encodeJSON(cond.Value)
	if err != nil {
		return nil, nil, err
	}
	return cond.Field, b, nil
}
