package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// ServiceType is the service type configurations name to open a [Store] from the parameters
// url and table (see the package documentation).
const ServiceType = "Webda/PostgresStore"

func init() {
	store.Register(store.Backend{
		Schemes:     []string{"postgres", "postgresql"},
		Open:        driver.Opener(openURL),
		ServiceType: ServiceType,
		Example:     "postgres://user@host:5432/database",
		Params:      []string{"table", notifyParam},
	})
}

// Store is a store.Store kept in one PostgreSQL table. It is safe for concurrent use; Close
// releases its connections.
type Store struct {
	*driver.Portable
	b *backend
}

// backend is the driver.Driver behind Store.
type backend struct {
	pool  *pgxpool.Pool
	conns *connTracker
	table string // as given, for messages
	q     queries
	batch *batcher     // the writes (batch.go)
	reads *readBatcher // the Gets (batch.go)
	// marks bounds the watches' first reads in flight (watch.go, sync): thousands of watches
	// started at once would otherwise queue for every connection of the pool, and a lease's
	// renewal, queued behind them, would miss its deadline.
	marks chan struct{}

	// Notifications (watch.go); channel is empty with notify=false.
	channel     string
	listenCheck time.Duration
	watch       watchState
}

// queries holds the statements, built once with the quoted table name.
type queries struct {
	get, create, patch, patchIf, del, delIf string
	getMany                                 string // the Gets of a batch (batch.go)
	mark                                    string // a watch's read (watch.go)
}

func newQueries(table string) queries {
	t := pgx.Identifier{table}.Sanitize()
	return queries{
		get:     `SELECT doc FROM ` + t + ` WHERE id = $1`,
		getMany: `SELECT id, doc FROM ` + t + ` WHERE id = ANY($1::text[])`,
		create:  `INSERT INTO ` + t + ` (id, doc) VALUES ($1, $2::jsonb) ON CONFLICT (id) DO NOTHING`,
		// jsonb_typeof guards against merging into a row that is not an object: || would turn it
		// into an array silently.
		patch:   `UPDATE ` + t + ` SET doc = doc || $2::jsonb WHERE id = $1 AND jsonb_typeof(doc) = 'object'`,
		patchIf: `UPDATE ` + t + ` SET doc = doc || $2::jsonb WHERE id = $1 AND jsonb_typeof(doc) = 'object' AND doc -> $3::text = $4::jsonb`,
		del:     `DELETE FROM ` + t + ` WHERE id = $1`,
		delIf:   `DELETE FROM ` + t + ` WHERE id = $1 AND doc -> $2::text = $3::jsonb`,
	}
}

// Open connects to the PostgreSQL server named by rawURL and creates the table if it is
// missing. The URL's parameters are described in the package documentation.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	return driver.OpenWith(ctx, "postgres", rawURL, openURL)
}

// openURL returns errors without the URL: its callers add the redacted URL.
func openURL(ctx context.Context, u *url.URL) (*Store, error) {
	u, notify, err := takeNotify(u)
	if err != nil {
		return nil, store.ConfigError(err)
	}
	cfg, table, err := parseURL(u)
	if err != nil {
		return nil, store.ConfigError(err)
	}
	return openConfig(ctx, cfg, table, notify)
}

func openConfig(ctx context.Context, cfg *pgxpool.Config, table string, notify bool) (*Store, error) {
	conns := newConnTracker(cfg.ConnConfig.DialFunc)
	cfg.ConnConfig.DialFunc = conns.Dial
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	q := newQueries(table)
	s := &backend{pool: pool, conns: conns, table: table, q: q, batch: newBatcher(pool), reads: newReadBatcher(pool, q.get, q.getMany),
		marks: make(chan struct{}, max(1, int(pool.Config().MaxConns)/4))}
	// pgxpool connects lazily: Ping makes a server that cannot be reached fail here, with pgx's
	// "failed to connect" error rather than under the table's creation.
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		if refusedCredentials(err) {
			err = store.ConfigError(err)
		}
		return nil, err
	}
	if err := s.createTable(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if notify {
		s.setupNotify()
	}
	return &Store{Portable: driver.New(s), b: s}, nil
}

// createTable creates the table if it is missing. CREATE TABLE IF NOT EXISTS is not safe against
// itself: two sessions creating the same table at once can both pass the existence check, and
// the loser fails on a unique index of the catalog (pg_type's, SQLSTATE 23505), on the row
// type's name (42710, duplicate_object) or with 42P07.
// The loser's second attempt sees the table and does nothing.
func (s *backend) createTable(ctx context.Context) error {
	stmt := `CREATE TABLE IF NOT EXISTS ` + pgx.Identifier{s.table}.Sanitize() + ` (id text PRIMARY KEY, doc jsonb NOT NULL)`
	var err error
	for range 3 {
		if _, err = s.pool.Exec(ctx, stmt); err == nil {
			return nil
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || (pe.Code != "23505" && pe.Code != "42710" && pe.Code != "42P07") {
			break
		}
	}
	return fmt.Errorf("create table %s: %w", s.table, err)
}

// Close closes the store's connections. The writes and reads queued for a batch fail at once (store
// closed); Close waits for the operations in progress for a second, then closes their
// connections under them (they fail), so that it returns promptly even when the network to the
// server is cut, and returns once the goroutines sending batches have.
func (s *backend) Close() error {
	s.closeWatches()
	s.batch.close()
	s.reads.Close()
	defer s.reads.Wait()
	defer s.batch.wait()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.pool.Close()
	}()
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
	}
	s.conns.closeAll()
	<-done
	return nil
}

// Table returns the name of the store's table.
func (s *Store) Table() string { return s.b.table }

func (s *backend) Get(ctx context.Context, key string) (map[string]any, error) {
	doc, err := s.get(ctx, key)
	return doc, s.explain(ctx, err)
}

func (s *backend) get(ctx context.Context, key string) (map[string]any, error) {
	raw, found, err := s.reads.get(ctx, key)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, store.ErrNotFound
	}
	doc, err := driver.DecodeRow("postgres", s.table, raw)
	if err != nil {
		return nil, err
	}
	return unescapeValue(doc).(map[string]any), nil
}

// Create uses INSERT ... ON CONFLICT DO NOTHING: it never overwrites, and of concurrent
// creators exactly one inserts a row.
func (s *backend) Create(ctx context.Context, key string, doc map[string]any) error {
	b, err := encodeJSON(doc)
	if err != nil {
		return err
	}
	n, err := s.batch.exec(ctx, key, s.q.create, key, b)
	return driver.Inserted(n, s.explain(ctx, err))
}

// Patch is one UPDATE whose WHERE clause carries the condition, so the check and the write are
// one atomic step: PostgreSQL re-evaluates the WHERE clause on the latest version of a row that
// a concurrent transaction changed. When it changes no row, driver.WriteOrExplain tells why.
func (s *backend) Patch(ctx context.Context, key string, fields map[string]any, cond *driver.Condition) error {
	b, err := encodeJSON(fields)
	if err != nil {
		return err
	}
	if cond == nil {
		return s.write(ctx, key, nil, s.q.patch, key, b)
	}
	want, err := encodeCondition(cond)
	if err != nil {
		return err
	}
	return s.write(ctx, key, cond, s.q.patchIf, key, b, escapeString(cond.Field), want)
}

// Delete is one DELETE, under the same rules as Patch.
func (s *backend) Delete(ctx context.Context, key string, cond *driver.Condition) error {
	if cond == nil {
		return s.write(ctx, key, nil, s.q.del, key)
	}
	want, err := encodeCondition(cond)
	if err != nil {
		return err
	}
	return s.write(ctx, key, cond, s.q.delIf, key, escapeString(cond.Field), want)
}

// write runs a conditional Patch or Delete statement; see driver.WriteOrExplain for what it does
// when the statement changes no row.
func (s *backend) write(ctx context.Context, key string, cond *driver.Condition, stmt string, args ...any) error {
	return driver.WriteOrExplain(cond,
		func() (int64, error) {
			return s.batch.exec(ctx, key, stmt, args...)
		},
		func() (map[string]any, error) { return s.get(ctx, key) },
		func(err error) error { return s.explain(ctx, err) })
}

// explain adds the context's error and the table to err (see driver.TableError); an error of
// an operation its context ended keeps pgx's own text.
func (s *backend) explain(ctx context.Context, err error) error {
	err = driver.ContextError(ctx, err)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return driver.TableError[*pgconn.PgError](ctx, err, "postgres", s.table)
}

// encodeJSON escapes a normalized value (see nul.go) and returns its JSON text.
func encodeJSON(v any) (string, error) {
	b, err := json.Marshal(escapeValue(v))
	if err != nil {
		return "", fmt.Errorf("%w: %v", store.ErrInvalid, err)
	}
	return string(b), nil
}

// encodeCondition returns the escaped JSON text of the condition's value. escapeValue changes
// maps in place, and cond.Value is what driver.WriteOrExplain compares the unescaped row with:
// another copy is escaped.
func encodeCondition(cond *driver.Condition) (string, error) {
	v, err := driver.Normalize(cond.Value)
	if err != nil {
		return "", err
	}
	return encodeJSON(v)
}

// refusedCredentials reports whether err is the server's refusal of the connection's
// credentials or authorization (SQLSTATE class 28: invalid_authorization_specification 28000,
// invalid_password 28P01): a configuration error, which waiting does not cure.
func refusedCredentials(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && strings.HasPrefix(pe.Code, "28")
}
