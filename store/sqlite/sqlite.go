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
)

func init() {
	store.RegisterOpener("sqlite", func(ctx context.Context, u *url.URL) (store.Store, error) { return openURL(ctx, u) })
}

// Store is a store.Store kept in one table of an SQLite file. It is safe for concurrent use,
// also by other processes opening the same file; Close releases the file.
type Store struct {
	db    *sql.DB
	busy  time.Duration // the URL's busy_timeout, see retryBusy
	path  string
	table string
	q     queries
}

var _ store.Store = (*Store)(nil)

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
	return store.OpenWith(ctx, "sqlite", rawURL, openURL)
}

func openURL(ctx context.Context, u *url.URL) (*Store, error) {
	c, err := parseURL(u)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", c.dsn())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(c.maxOpen)
	db.SetMaxIdleConns(c.maxOpen)
	s := &Store{db: db, busy: c.busyTimeout, path: c.path, table: c.table, q: newQueries(c.table)}
	// The first connection switches the file to WAL mode, taking the write lock (and failing on
	// a file that is not a database or cannot be opened).
	if err := retryBusy(ctx, s.busy, func() error { return db.PingContext(ctx) }); err != nil {
		db.Close()
		return nil, err
	}
	// CREATE TABLE IF NOT EXISTS takes SQLite's write lock, so creators in several processes
	// run one after the other (waiting up to busy_timeout) and all but the first do nothing.
	_, err = s.exec(ctx, `CREATE TABLE IF NOT EXISTS "`+c.table+`" (id TEXT NOT NULL PRIMARY KEY, doc TEXT NOT NULL)`)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("create table %s: %w", c.table, err)
	}
	return s, nil
}

// exec runs one statement, again while it fails with SQLITE_BUSY (see retryBusy).
func (s *Store) exec(ctx context.Context, stmt string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := retryBusy(ctx, s.busy, func() error {
		var err error
		res, err = s.db.ExecContext(ctx, stmt, args...)
		return err
	})
	return res, err
}

// Close closes the store's connections.
func (s *Store) Close() error { return s.db.Close() }

// Table returns the name of the store's table.
func (s *Store) Table() string { return s.table }

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (map[string]any, error) {
	if err := store.CheckCall(ctx, key); err != nil {
		return nil, store.WrapKey("get", key, err)
	}
	doc, err := s.get(ctx, key)
	return doc, s.wrap(ctx, "get", key, err)
}

func (s *Store) get(ctx context.Context, key string) (map[string]any, error) {
	var raw string
	err := retryBusy(ctx, s.busy, func() error { return s.db.QueryRowContext(ctx, s.q.get, key).Scan(&raw) })
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(raw), &doc); err != nil || doc == nil {
		what := "not a JSON object"
		if !json.Valid([]byte(raw)) {
			what = "not valid JSON"
		}
		return nil, fmt.Errorf("sqlite: the document in table %s is %s: %.60q", s.table, what, raw)
	}
	return doc, nil
}

// Create implements store.Store with INSERT ... ON CONFLICT DO NOTHING: it never overwrites, and
// of concurrent creators, in this process or others, exactly one inserts a row.
func (s *Store) Create(ctx context.Context, key string, doc map[string]any) error {
	if err := store.CheckCall(ctx, key); err != nil {
		return store.WrapKey("create", key, err)
	}
	b, err := encodeDoc(doc)
	if err != nil {
		return store.WrapKey("create", key, err)
	}
	res, err := s.exec(ctx, s.q.create, key, b)
	if err != nil {
		return s.wrap(ctx, "create", key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return s.wrap(ctx, "create", key, err)
	}
	if n == 0 {
		return store.WrapKey("create", key, store.ErrExists)
	}
	return nil
}

// Patch implements store.Store with one UPDATE whose WHERE clause carries the condition, so the
// check and the write are one atomic step under SQLite's write lock.
//
// When the UPDATE changes no row, the store reads the row to tell why: no row is ErrNotFound, a
// row that does not meet the condition is ErrConditionFailed. Both answers are true at the
// instant of that read, which lies within the call, and the call had no effect: this is where
// it takes effect. If the row read does meet the condition (another writer changed it between
// the two statements), the UPDATE is run again, as the call has not taken effect yet.
func (s *Store) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	if err := store.CheckCall(ctx, key); err != nil {
		return store.WrapKey("patch", key, err)
	}
	b, err := encodeDoc(fields)
	if err != nil {
		return store.WrapKey("patch", key, err)
	}
	want, field, wantJSON, err := encodeCondition(cond)
	if err != nil {
		return store.WrapKey("patch", key, err)
	}
	return s.write(ctx, "patch", key, cond, want, s.q.patch, b, key, field, wantJSON)
}

// Delete implements store.Store with one DELETE, under the same rules as Patch.
func (s *Store) Delete(ctx context.Context, key string, cond *store.Condition) error {
	if err := store.CheckCall(ctx, key); err != nil {
		return store.WrapKey("delete", key, err)
	}
	want, field, wantJSON, err := encodeCondition(cond)
	if err != nil {
		return store.WrapKey("delete", key, err)
	}
	if cond == nil {
		return s.write(ctx, "delete", key, cond, want, s.q.del, key)
	}
	return s.write(ctx, "delete", key, cond, want, s.q.delIf, key, field, wantJSON)
}

// write runs a conditional Patch or Delete statement; see store.WriteOrExplain for what it does
// when the statement changes no row.
func (s *Store) write(ctx context.Context, op, key string, cond *store.Condition, want any, stmt string, args ...any) error {
	return store.WriteOrExplain(op, key, cond, want,
		func() (int64, error) {
			res, err := s.exec(ctx, stmt, args...)
			if err != nil {
				return 0, err
			}
			return res.RowsAffected()
		},
		func() (map[string]any, error) { return s.get(ctx, key) },
		func(err error) error { return s.wrap(ctx, op, key, err) })
}

// wrap adds the key to err, the table to an SQLite error, and the context's error when the
// context ended the operation, so that errors.Is finds context.Canceled or DeadlineExceeded
// whatever the driver reported.
func (s *Store) wrap(ctx context.Context, op, key string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w: %w", cerr, err)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		err = fmt.Errorf("sqlite: table %s: %w", s.table, err)
	}
	return store.WrapKey(op, key, err)
}

func encodeDoc(doc map[string]any) (string, error) {
	n, err := store.NormalizeDoc(doc)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(n)
	if err != nil {
		return "", fmt.Errorf("%w: %v", store.ErrInvalid, err)
	}
	return string(b), nil
}

// encodeCondition returns the condition's normalized value (for store.Matches), and the field
// and the value's JSON for leasehold_doc_matches: a nil field (SQL NULL) without a condition.
func encodeCondition(cond *store.Condition) (want, field, wantJSON any, err error) {
	want, err = store.CheckCondition(cond)
	if err != nil || cond == nil {
		return nil, nil, nil, err
	}
	b, err := json.Marshal(want)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %v", store.ErrInvalid, err)
	}
	return want, cond.Field, string(b), nil
}
