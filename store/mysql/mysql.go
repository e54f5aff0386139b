package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// ServiceType is the service type configurations name to open a [Store] from the parameters
// url and table (see the package documentation).
const ServiceType = "Webda/MySQLStore"

func init() {
	store.Register(store.Backend{
		Schemes:     []string{"mysql"},
		Open:        driver.Opener(openURL),
		ServiceType: ServiceType,
		Example:     "mysql://user:password@host:3306/database",
		Params:      []string{"table"},
	})
}

// Store is a store.Store kept in one MySQL or MariaDB table. It is safe for concurrent use;
// Close releases its connections.
type Store struct {
	*driver.Portable
	b *backend
}

// backend is the driver.Driver behind Store.
type backend struct {
	db      *sql.DB
	table   string
	mariadb bool
}

// Open connects to the server named by rawURL and creates the table if it is missing. The URL's
// parameters are described in the package documentation.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	return driver.OpenWith(ctx, "mysql", rawURL, openURL)
}

// openURL returns errors without the URL: its callers add the redacted URL.
func openURL(ctx context.Context, u *url.URL) (*Store, error) {
	c, err := parseURL(u)
	if err != nil {
		return nil, store.ConfigError(err)
	}
	conn, err := mysql.NewConnector(c.driver)
	if err != nil {
		return nil, store.ConfigError(err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(c.pool.maxOpen)
	db.SetMaxIdleConns(c.pool.maxIdle)
	db.SetConnMaxLifetime(c.pool.maxLifetime)
	db.SetConnMaxIdleTime(c.pool.maxIdleTime)
	s := &backend{db: db, table: c.table}
	if err := s.setup(ctx); err != nil {
		db.Close()
		var me *mysql.MySQLError
		if errors.As(err, &me) && (me.Number == 1045 || me.Number == 1044 || me.Number == 1698) {
			// Access denied (for the user, to the database): waiting does not cure it.
			err = store.ConfigError(err)
		}
		return nil, driver.ExplainTLS(err)
	}
	return &Store{Portable: driver.New(s), b: s}, nil
}

// setup finds the server's dialect and creates the table. CREATE TABLE IF NOT EXISTS is safe
// against itself on MySQL and MariaDB (the table's metadata lock serializes the creators).
func (s *backend) setup(ctx context.Context) error {
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

// quoted is the table's name for SQL text (driver.CheckTableName allowed only identifier characters).
func (s *backend) quoted() string { return "`" + s.table + "`" }

// Close closes the store's connections.
func (s *backend) Close() error { return s.db.Close() }

// Table returns the name of the store's table.
func (s *Store) Table() string { return s.b.table }

// MariaDB reports whether the server is MariaDB (otherwise MySQL).
func (s *Store) MariaDB() bool { return s.b.mariadb }

func (s *backend) Get(ctx context.Context, key string) (map[string]any, error) {
	doc, err := s.get(ctx, key)
	return doc, s.explain(ctx, err)
}

// get is a locking read (LOCK IN SHARE MODE), which reads the row's latest committed version
// after waiting for its writer, like the INSERT, UPDATE and DELETE statements do. A plain read
// reads a snapshot, which can miss for a moment a row whose INSERT other statements already
// take for committed, such as the INSERT that just answered a duplicate key (see the package
// documentation): a Get after a Create's ErrExists would then find no document.
func (s *backend) get(ctx context.Context, key string) (map[string]any, error) {
	var raw []byte
	err := retry(ctx, func() error {
		return s.db.QueryRowContext(ctx, `SELECT doc FROM `+s.quoted()+` WHERE id = ? LOCK IN SHARE MODE`, key).Scan(&raw)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return driver.DecodeRow("mysql", s.table, raw)
}

// Create is an INSERT: a duplicate key (error 1062) is ErrExists, so it never overwrites, and
// of concurrent creators exactly one inserts a row. A deadlock's victim runs again (see retry).
func (s *backend) Create(ctx context.Context, key string, doc map[string]any) error {
	err := retry(ctx, func() error {
		_, err := s.db.ExecContext(ctx, `INSERT INTO `+s.quoted()+` (id, doc) VALUES (?, ?)`, key, string(encodeJSON(doc)))
		return err
	})
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1062 {
		return driver.Wrap(store.ErrExists, err)
	}
	return s.explain(ctx, err)
}

// Patch is one UPDATE whose WHERE clause carries the condition, so the check and the write are
// one atomic step. When it matches no row, driver.WriteOrExplain tells why.
func (s *backend) Patch(ctx context.Context, key string, fields map[string]any, cond *driver.Condition) error {
	where, whereArgs := s.condition(cond)
	// Two merges, so that no path names a field (MariaDB's paths cannot name every key):
	// JSON_MERGE_PATCH with {field: null, ...} removes the fields, then JSON_MERGE_PRESERVE adds
	// them with their new values, copied as they are (JSON_MERGE_PATCH alone would drop a null
	// value and the nulls inside an object, and merge objects into the old ones).
	removals := make(map[string]any, len(fields))
	for k := range fields {
		removals[k] = nil
	}
	// JSON_TYPE guards against a row that is not an object, which the merges would turn into
	// an array or replace; JSON_VALID, in a CASE that evaluates it first, against a row that is
	// not JSON at all, on which the other functions fail with a message that does not say so.
	stmt := `UPDATE ` + s.quoted() + ` SET doc = JSON_MERGE_PRESERVE(JSON_MERGE_PATCH(doc, ?), ?)` +
		` WHERE id = ? AND CASE WHEN JSON_VALID(doc) THEN JSON_TYPE(doc) = 'OBJECT'` + where + ` ELSE 0 END`
	args := append([]any{string(encodeJSON(removals)), string(encodeJSON(fields)), key}, whereArgs...)
	return s.write(ctx, key, cond, stmt, args)
}

// Delete is one DELETE, under the same rules as Patch.
func (s *backend) Delete(ctx context.Context, key string, cond *driver.Condition) error {
	where, whereArgs := s.condition(cond)
	stmt := `DELETE FROM ` + s.quoted() + ` WHERE id = ?`
	if cond != nil {
		stmt += ` AND CASE WHEN JSON_VALID(doc) THEN 1` + where + ` ELSE 0 END`
	}
	return s.write(ctx, key, cond, stmt, append([]any{key}, whereArgs...))
}

// condition returns the condition's WHERE clause and its arguments.
func (s *backend) condition(cond *driver.Condition) (string, []any) {
	if cond == nil {
		return "", nil
	}
	// A missing field extracts as SQL NULL, which neither comparison matches. "= 1" is needed:
	// MariaDB takes JSON_EQUALS(NULL, ...) for true in a WHERE clause.
	clause := ` AND JSON_EXTRACT(doc, ?) = CAST(? AS JSON)`
	if s.mariadb {
		clause = ` AND JSON_EQUALS(JSON_EXTRACT(doc, ?), ?) = 1`
	}
	return clause, []any{fieldPath(cond.Field), string(encodeJSON(cond.Value))}
}

// write runs a conditional Patch or Delete statement; see driver.WriteOrExplain for what it does
// when the statement changes no row.
func (s *backend) write(ctx context.Context, key string, cond *driver.Condition, stmt string, args []any) error {
	return driver.WriteOrExplain(cond,
		func() (int64, error) {
			var n int64
			err := retry(ctx, func() error {
				var err error
				n, err = driver.RowsAffected(s.db.ExecContext(ctx, stmt, args...))
				return err
			})
			return n, err
		},
		func() (map[string]any, error) { return s.get(ctx, key) },
		func(err error) error { return s.explain(ctx, err) })
}

// explain adds the context's error and the table to err (see driver.TableError).
func (s *backend) explain(ctx context.Context, err error) error {
	return driver.TableError[*mysql.MySQLError](ctx, err, "mysql", s.table)
}
