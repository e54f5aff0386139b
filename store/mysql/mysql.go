package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/leasehold/leasehold/store"
)

func init() {
	store.RegisterOpener("mysql", func(ctx context.Context, u *url.URL) (store.Store, error) { return openURL(ctx, u) })
}

// Store is a store.Store kept in one MySQL or MariaDB table. It is safe for concurrent use;
// Close releases its connections.
type Store struct {
	db      *sql.DB
	table   string
	mariadb bool
}

var _ store.Store = (*Store)(nil)

// Open connects to the server named by rawURL and creates the table if it is missing. The URL's
// parameters are described in the package documentation.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	return store.OpenWith(ctx, "mysql", rawURL, openURL)
}

// openURL returns errors without the URL: its callers add the redacted URL.
func openURL(ctx context.Context, u *url.URL) (*Store, error) {
	c, err := parseURL(u)
	if err != nil {
		return nil, err
	}
	conn, err := mysql.NewConnector(c.driver)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(c.pool.maxOpen)
	db.SetMaxIdleConns(c.pool.maxIdle)
	db.SetConnMaxLifetime(c.pool.maxLifetime)
	db.SetConnMaxIdleTime(c.pool.maxIdleTime)
	s := &Store{db: db, table: c.table}
	if err := s.setup(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// setup finds the server's dialect and creates the table. CREATE TABLE IF NOT EXISTS is safe
// against itself on MySQL and MariaDB (the table's metadata lock serializes the creators).
func (s *Store) setup(ctx context.Context) error {
	var version string
	if err := s.db.QueryRowContext(ctx, `SELECT VERSION()`).Scan(&version); err != nil {
		return err
	}
	s.mariadb = strings.Contains(strings.ToLower(version), "mariadb")
	if s.mariadb {
		var eq sql.NullBool
		if err := s.db.QueryRowContext(ctx, `SELECT JSON_EQUALS('1', '1.0')`).Scan(&eq); err != nil {
			return fmt.Errorf("MariaDB %s cannot compare JSON values (JSON_EQUALS needs MariaDB 10.7 or later): %w", version, err)
		}
	}
	_, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+s.quoted()+
		` (id VARBINARY(1024) NOT NULL PRIMARY KEY, doc JSON NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`)
	if err != nil {
		return fmt.Errorf("create table %s: %w", s.table, err)
	}
	return nil
}

// quoted is the table's name for SQL text (checkTable allowed only identifier characters).
func (s *Store) quoted() string { return "`" + s.table + "`" }

// Close closes the store's connections.
func (s *Store) Close() error { return s.db.Close() }

// Table returns the name of the store's table.
func (s *Store) Table() string { return s.table }

// MariaDB reports whether the server is MariaDB (otherwise MySQL).
func (s *Store) MariaDB() bool { return s.mariadb }

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (map[string]any, error) {
	if err := store.CheckCall(ctx, key); err != nil {
		return nil, store.WrapKey("get", key, err)
	}
	doc, err := s.get(ctx, key)
	return doc, s.wrap(ctx, "get", key, err)
}

func (s *Store) get(ctx context.Context, key string) (map[string]any, error) {
	var raw []byte
	err := s.db.QueryRowContext(ctx, `SELECT doc FROM `+s.quoted()+` WHERE id = ?`, key).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil || doc == nil {
		what := "not a JSON object"
		if !json.Valid(raw) {
			what = "not valid JSON"
		}
		return nil, fmt.Errorf("mysql: the document in table %s is %s: %.60q", s.table, what, raw)
	}
	return doc, nil
}

// Create implements store.Store with an INSERT: a duplicate key (error 1062) is ErrExists, so
// it never overwrites, and of concurrent creators exactly one inserts a row.
func (s *Store) Create(ctx context.Context, key string, doc map[string]any) error {
	if err := store.CheckCall(ctx, key); err != nil {
		return store.WrapKey("create", key, err)
	}
	n, err := store.NormalizeDoc(doc)
	if err != nil {
		return store.WrapKey("create", key, err)
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO `+s.quoted()+` (id, doc) VALUES (?, ?)`, key, string(encodeJSON(n)))
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1062 {
		return store.WrapKey("create", key, store.Wrap(store.ErrExists, err))
	}
	return s.wrap(ctx, "create", key, err)
}

// Patch implements store.Store with one UPDATE whose WHERE clause carries the condition, so the
// check and the write are one atomic step.
//
// When the UPDATE matches no row, the store reads the row to tell why: no row is ErrNotFound, a
// row that does not meet the condition is ErrConditionFailed. Both answers are true at the
// instant of that read, which lies within the call, and the call had no effect: this is where
// it takes effect. If the row read does meet the condition (a concurrent writer changed it
// between the two statements), the UPDATE is run again, as the call has not taken effect yet.
func (s *Store) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	if err := store.CheckCall(ctx, key); err != nil {
		return store.WrapKey("patch", key, err)
	}
	n, err := store.NormalizeDoc(fields)
	if err != nil {
		return store.WrapKey("patch", key, err)
	}
	want, where, whereArgs, err := s.condition(cond)
	if err != nil {
		return store.WrapKey("patch", key, err)
	}
	// Two merges, so that no path names a field (MariaDB's paths cannot name every key):
	// JSON_MERGE_PATCH with {field: null, ...} removes the fields, then JSON_MERGE_PRESERVE adds
	// them with their new values, copied as they are (JSON_MERGE_PATCH alone would drop a null
	// value and the nulls inside an object, and merge objects into the old ones).
	removals := make(map[string]any, len(n))
	for k := range n {
		removals[k] = nil
	}
	// JSON_TYPE guards against a row that is not an object, which the merges would turn into
	// an array or replace; JSON_VALID, in a CASE that evaluates it first, against a row that is
	// not JSON at all, on which the other functions fail with a message that does not say so.
	stmt := `UPDATE ` + s.quoted() + ` SET doc = JSON_MERGE_PRESERVE(JSON_MERGE_PATCH(doc, ?), ?)` +
		` WHERE id = ? AND CASE WHEN JSON_VALID(doc) THEN JSON_TYPE(doc) = 'OBJECT'` + where + ` ELSE 0 END`
	args := append([]any{string(encodeJSON(removals)), string(encodeJSON(n)), key}, whereArgs...)
	return s.write(ctx, "patch", key, cond, want, stmt, args)
}

// Delete implements store.Store with one DELETE, under the same rules as Patch.
func (s *Store) Delete(ctx context.Context, key string, cond *store.Condition) error {
	if err := store.CheckCall(ctx, key); err != nil {
		return store.WrapKey("delete", key, err)
	}
	want, where, whereArgs, err := s.condition(cond)
	if err != nil {
		return store.WrapKey("delete", key, err)
	}
	stmt := `DELETE FROM ` + s.quoted() + ` WHERE id = ?`
	if cond != nil {
		stmt += ` AND CASE WHEN JSON_VALID(doc) THEN 1` + where + ` ELSE 0 END`
	}
	return s.write(ctx, "delete", key, cond, want, stmt, append([]any{key}, whereArgs...))
}

// condition returns the condition's normalized value (for store.Matches) and its WHERE clause.
func (s *Store) condition(cond *store.Condition) (any, string, []any, error) {
	want, err := store.CheckCondition(cond)
	if err != nil || cond == nil {
		return nil, "", nil, err
	}
	// A missing field extracts as SQL NULL, which neither comparison matches. "= 1" is needed:
	// MariaDB takes JSON_EQUALS(NULL, ...) for true in a WHERE clause.
	clause := ` AND JSON_EXTRACT(doc, ?) = CAST(? AS JSON)`
	if s.mariadb {
		clause = ` AND JSON_EQUALS(JSON_EXTRACT(doc, ?), ?) = 1`
	}
	return want, clause, []any{fieldPath(cond.Field), string(encodeJSON(want))}, nil
}

// write runs a conditional Patch or Delete statement; see store.WriteOrExplain for what it does
// when the statement changes no row.
func (s *Store) write(ctx context.Context, op, key string, cond *store.Condition, want any, stmt string, args []any) error {
	return store.WriteOrExplain(op, key, cond, want,
		func() (int64, error) {
			res, err := s.db.ExecContext(ctx, stmt, args...)
			if err != nil {
				return 0, err
			}
			return res.RowsAffected()
		},
		func() (map[string]any, error) { return s.get(ctx, key) },
		func(err error) error { return s.wrap(ctx, op, key, err) })
}

// wrap adds the key to err, the table to a server error, and the context's error when the
// context ended the operation, so that errors.Is finds context.Canceled or DeadlineExceeded
// whatever the driver reported.
func (s *Store) wrap(ctx context.Context, op, key string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w: %w", cerr, err)
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		err = fmt.Errorf("mysql: table %s: %w", s.table, err)
	}
	return store.WrapKey(op, key, err)
}
