package postgres

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasehold/leasehold/internal/cuttest"
	"github.com/leasehold/leasehold/internal/sqltest"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/internal/testurl"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// TestConformance runs the store conformance suite (T5) against the real server, on a table of
// its own.
func TestConformance(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	storetest.Run(t, func(*testing.T) store.Store { return s })
}

// TestOpenThroughRegistry: store.Open knows both schemes (T4).
func TestOpenThroughRegistry(t *testing.T) {
	t.Parallel()
	for _, scheme := range []string{"postgres", "postgresql"} {
		table := testenv.TableName(t)
		raw := testurl.With(t, serverURL(t), "table", table)
		raw = scheme + strings.TrimPrefix(raw, raw[:strings.Index(raw, ":")])
		st, err := store.Open(t.Context(), raw)
		if err != nil {
			t.Fatalf("store.Open(%s): %v", scheme, err)
		}
		s, ok := st.(*Store)
		if !ok {
			t.Fatalf("store.Open(%s) returned %T, want *postgres.Store", scheme, st)
		}
		t.Cleanup(func() { dropTable(t, s) })
		if s.Table() != table {
			t.Errorf("table = %q, want %q", s.Table(), table)
		}
		if err := st.Create(t.Context(), "k", map[string]any{"a": 1}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConcurrentTableCreation: several stores opening a missing table at once all succeed
// (PostgreSQL's CREATE TABLE IF NOT EXISTS races on its catalog).
func TestConcurrentTableCreation(t *testing.T) {
	t.Parallel()
	raw := testurl.With(t, serverURL(t), "table", testenv.TableName(t))
	const n = 8
	stores := make([]*Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = Open(t.Context(), raw) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("Open #%d: %v", i, errs[i])
			continue
		}
		if i == 0 {
			t.Cleanup(func() { dropTable(t, stores[0]) })
		} else {
			t.Cleanup(func() { stores[i].Close() })
		}
	}
}

// TestFieldNamesNeedingEscapes: conditions and patches on field names that are not identifiers,
// including the characters the jsonb escape uses.
func TestFieldNamesNeedingEscapes(t *testing.T) {
	t.Parallel()
	sqltest.FieldNames(t, openTest(t), "v\x00\uE000", "a.b", `q"uote`, "nul\x00", "esc\uE000", "esc\uE0000", "é")
}

// countingTracer counts the statements a connection sends.
type countingTracer struct {
	mu  sync.Mutex
	sql []string
}

func (c *countingTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sql = append(c.sql, d.SQL)
	return ctx
}

func (c *countingTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *countingTracer) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.sql
	c.sql = nil
	return out
}

// TestOneStatementPerCall: a successful Create, Patch or Delete, conditional or not, sends one
// statement, with no read before the write (no read-modify-write in the client).
func TestOneStatementPerCall(t *testing.T) {
	t.Parallel()
	cfg, table, err := parseURL(testurl.Parse(t, testurl.With(t, serverURL(t), "table", testenv.TableName(t))))
	if err != nil {
		t.Fatal(err)
	}
	tr := &countingTracer{}
	cfg.ConnConfig.Tracer = tr
	s, err := openConfig(t.Context(), cfg, table, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropTable(t, s) })
	ctx := t.Context()
	tr.take()
	steps := []struct {
		name string
		do   func() error
	}{
		{"Create", func() error { return s.Create(ctx, "k", map[string]any{"rev": 1}) }},
		{"Patch", func() error { return s.Patch(ctx, "k", map[string]any{"x": 1}, nil) }},
		{"conditional Patch", func() error {
			return s.Patch(ctx, "k", map[string]any{"rev": 2}, &store.Condition{Field: "rev", Value: 1})
		}},
		{"conditional Delete", func() error { return s.Delete(ctx, "k", &store.Condition{Field: "rev", Value: 2.0}) }},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := tr.take(); len(got) != 1 {
			t.Errorf("%s sent %d statements, want 1: %q", st.name, len(got), got)
		}
	}
}

// TestCutConnection: when the network drops everything (a proxy that stops forwarding), an
// operation whose context has a deadline returns soon after it, instead of waiting for TCP.
func TestCutConnection(t *testing.T) {
	t.Parallel()
	raw := testurl.With(t, serverURL(t), "table", testenv.TableName(t), "connect_timeout", "2")
	u := testurl.Parse(t, raw)
	p := newProxy(t, u.Host)
	s, err := Open(t.Context(), testurl.Host(t, raw, p.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	direct, err := Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropTable(t, direct) })
	cuttest.Run(t, s, p)
	doc, err := direct.Get(t.Context(), "k")
	if err != nil {
		t.Fatal(err)
	}
	if doc["rev"] != 2.0 {
		t.Errorf("document after the cuts: %v, want rev 2 (patched once, while the network was up)", doc)
	}
}

// pool returns the pool of a store, for tests writing rows the store would not write.
func (s *Store) rawPool() *pgxpool.Pool { return s.b.pool }
