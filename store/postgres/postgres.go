package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasehold/leasehold/store"
)

func init() {
	open := func(ctx context.Context, u *url.URL) (store.Store, error) { return openURL(ctx, u) }
	store.RegisterOpener("postgres", open)
	store.RegisterOpener("postgresql", open)
}

// Store is a store.Store kept in one PostgreSQL table. It is safe for concurrent use; Close
// releases its connections.
type Store struct {
	pool  *pgxpool.Pool
	conns *connTracker
	table string // as given, for messages
	q     queries
}

var _ store.Store = (*Store)(nil)

// queries holds the statements, built once with the quoted table name.
type queries struct {
	get, create, patch, patchIf, del, delIf string
}

func newQueries(table string) queries {
	t := pgx.Identifier{table}.Sanitize()
	return queries{
		get:    `SELECT doc FROM ` + t + ` WHERE id = $1`,
		create: `INSERT INTO ` + t + ` (id, doc) VALUES ($1, $2::jsonb) ON CONFLICT (id) DO NOTHING`,
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
	return store.OpenWith(ctx, "postgres", rawURL, openURL)
}

// openURL returns errors without the URL: its callers add the redacted URL.
func openURL(ctx context.Context, u *url.URL) (*Store, error) {
	cfg, table, err := parseURL(u)
	if err != nil {
		return nil, err
	}
	return openConfig(ctx, cfg, table)
}

func openConfig(ctx context.Context, cfg *pgxpool.Config, table string) (*Store, error) {
	conns := newConnTracker(cfg.ConnConfig.DialFunc)
	cfg.ConnConfig.DialFunc = conns.Dial
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s := &Store{pool: pool, conns: conns, table: table, q: newQueries(table)}
	// pgxpool connects lazily: Ping makes a server that cannot be reached fail here, with pgx's
	// "failed to connect" error rather than under the table's creation.
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if err := s.createTable(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// createTable creates the table if it is missing. CREATE TABLE IF NOT EXISTS is not safe against
// itself: two sessions creating the same table at once can both pass the existence check, and
// the loser fails on a unique index of the catalog (pg_type's, SQLSTATE 23505), on the row
// type's name (42710, duplicate_object) or with 42P07.
// The loser's second attempt sees the table and does nothing.
func (s *Store) createTable(ctx context.Context) error {
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

// Close closes the store's connections. It waits for the operations in progress for a second,
// then closes their connections under them (they fail), so that it returns promptly even when
// the network to the server is cut.
func (s *Store) Close() error {
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
func (s *Store) Table() string { return s.table }

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
	err := s.pool.QueryRow(ctx, s.q.get, key).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return s.decode(raw)
}

// decode reads a stored document. A row that is not a JSON object (written by another program)
// is an error naming the table; the caller adds the key.
func (s *Store) decode(raw []byte) (map[string]any, error) {
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil || doc == nil {
		what := "not a JSON object"
		if !json.Valid(raw) {
			what = "not valid JSON"
		}
		return nil, fmt.Errorf("postgres: the document in table %s is %s: %.60q", s.table, what, raw)
	}
	return unescapeValue(doc).(map[string]any), nil
}

// Create implements store.Store with INSERT ... ON CONFLICT DO NOTHING: it never overwrites, and
// of concurrent creators exactly one inserts a row.
func (s *Store) Create(ctx context.Context, key string, doc map[string]any) error {
	if err := store.CheckCall(ctx, key); err != nil {
		return store.WrapKey("create", key, err)
	}
	b, err := encodeDoc(doc)
	if err != nil {
		return store.WrapKey("create", key, err)
	}
	tag, err := s.pool.Exec(ctx, s.q.create, key, b)
	if err != nil {
		return s.wrap(ctx, "create", key, err)
	}
	if tag.RowsAffected() == 0 {
		return store.WrapKey("create", key, store.ErrExists)
	}
	return nil
}

// Patch implements store.Store with one UPDATE whose WHERE clause carries the condition, so the
// check and the write are one atomic step: PostgreSQL re-evaluates the WHERE clause on the
// latest version of a row that a concurrent transaction changed.
//
// When the UPDATE changes no row, the store reads the row to tell why: no row is ErrNotFound, a
// row that does not meet the condition is ErrConditionFailed. Both answers are true at the
// instant of that read, which lies within the call, and the call had no effect: this is where
// it takes effect. If the row read does meet the condition (a concurrent writer changed it
// between the two statements), the UPDATE is run again, as the call has not taken effect yet.
func (s *Store) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	if err := store.CheckCall(ctx, key); err != nil {
		return store.WrapKey("patch", key, err)
	}
	b, err := encodeDoc(fields)
	if err != nil {
		return store.WrapKey("patch", key, err)
	}
	want, wantJSON, err := encodeCondition(cond)
	if err != nil {
		return store.WrapKey("patch", key, err)
	}
	return s.write(ctx, "patch", key, cond, want, func() (pgconn.CommandTag, error) {
		if cond == nil {
			return s.pool.Exec(ctx, s.q.patch, key, b)
		}
		return s.pool.Exec(ctx, s.q.patchIf, key, b, escapeString(cond.Field), wantJSON)
	})
}

// Delete implements store.Store with one DELETE, under the same rules as Patch.
func (s *Store) Delete(ctx context.Context, key string, cond *store.Condition) error {
	if err := store.CheckCall(ctx, key); err != nil {
		return store.WrapKey("delete", key, err)
	}
	want, wantJSON, err := encodeCondition(cond)
	if err != nil {
		return store.WrapKey("delete", key, err)
	}
	return s.write(ctx, "delete", key, cond, want, func() (pgconn.CommandTag, error) {
		if cond == nil {
			return s.pool.Exec(ctx, s.q.del, key)
		}
		return s.pool.Exec(ctx, s.q.delIf, key, escapeString(cond.Field), wantJSON)
	})
}

// write runs a conditional Patch or Delete statement with exec; see store.WriteOrExplain for
// what it does when the statement changes no row.
func (s *Store) write(ctx context.Context, op, key string, cond *store.Condition, want any, exec func() (pgconn.CommandTag, error)) error {
	return store.WriteOrExplain(op, key, cond, want,
		func() (int64, error) {
			tag, err := exec()
			return tag.RowsAffected(), err
		},
		func() (map[string]any, error) { return s.get(ctx, key) },
		func(err error) error { return s.wrap(ctx, op, key, err) })
}

// wrap adds the key to err, and the context's error when the context ended the operation, so
// that errors.Is finds context.Canceled or DeadlineExceeded whatever pgx reported.
func (s *Store) wrap(ctx context.Context, op, key string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w: %w", cerr, err)
	}
	if !errors.Is(err, store.ErrNotFound) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			err = fmt.Errorf("postgres: table %s: %w", s.table, err)
		}
	}
	return store.WrapKey(op, key, err)
}

// encodeDoc normalizes and escapes a document and returns its JSON text.
func encodeDoc(doc map[string]any) (string, error) {
	n, err := store.NormalizeDoc(doc)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(escapeValue(n))
	if err != nil {
		return "", fmt.Errorf("%w: %v", store.ErrInvalid, err)
	}
	return string(b), nil
}

// encodeCondition returns the condition's normalized value (for store.Matches) and its escaped
// JSON text (for the statement).
func encodeCondition(cond *store.Condition) (any, string, error) {
	want, err := store.CheckCondition(cond)
	if err != nil || cond == nil {
		return nil, "", err
	}
	// escapeValue changes maps in place; want is store.Matches' copy, so escape another one.
	again, err := store.Normalize(want)
	if err != nil {
		return nil, "", err
	}
	b, err := json.Marshal(escapeValue(again))
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", store.ErrInvalid, err)
	}
	return want, string(b), nil
}
