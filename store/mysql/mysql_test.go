package mysql

import (
	"sync"
	"testing"

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
	if !s.MariaDB() {
		t.Log("the server is MySQL, not MariaDB")
	}
	storetest.Run(t, func(*testing.T) store.Store { return s })
}

// TestOpenThroughRegistry: store.Open knows the mysql scheme (T4).
func TestOpenThroughRegistry(t *testing.T) {
	t.Parallel()
	table := testenv.TableName(t)
	st, err := store.Open(t.Context(), testurl.With(t, serverURL(t), "table", table))
	if err != nil {
		t.Fatal(err)
	}
	s, ok := st.(*Store)
	if !ok {
		t.Fatalf("store.Open returned %T, want *mysql.Store", st)
	}
	t.Cleanup(func() { s.Close(); dropTable(t, table) })
	if s.Table() != table {
		t.Errorf("table = %q, want %q", s.Table(), table)
	}
	if err := st.Create(t.Context(), "k", map[string]any{"a": 1}); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentTableCreation: several stores opening a missing table at once all succeed.
func TestConcurrentTableCreation(t *testing.T) {
	t.Parallel()
	table := testenv.TableName(t)
	raw := testurl.With(t, serverURL(t), "table", table)
	t.Cleanup(func() { dropTable(t, table) })
	sqltest.ConcurrentOpen(t, 8, func() (store.Store, error) { return Open(t.Context(), raw) })
}

// TestFieldNamesNeedingEscapes: conditions and patches on field names that are not identifiers
// (JSON paths quote them).
func TestFieldNamesNeedingEscapes(t *testing.T) {
	t.Parallel()
	sqltest.FieldNames(t, openTest(t), "v", "a.b", `q"uote`, `back\slash`, "[0]", "*", "$", "é", "<&>", "nul\x00")
}

// commandCounter counts the commands clients send in the MySQL protocol: each starts a packet
// with sequence number 0, whose first payload byte names it (COM_QUERY is 3, COM_STMT_PREPARE
// 0x16, COM_STMT_EXECUTE 0x17).
type commandCounter struct {
	mu   sync.Mutex
	buf  map[int][]byte
	cmds []byte
}

func (c *commandCounter) inspect(conn int, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.buf == nil {
		c.buf = map[int][]byte{}
	}
	buf := append(c.buf[conn], b...)
	for len(buf) >= 4 {
		n := int(buf[0]) | int(buf[1])<<8 | int(buf[2])<<16
		if len(buf) < 4+n {
			break
		}
		if buf[3] == 0 && n > 0 {
			c.cmds = append(c.cmds, buf[4])
		}
		buf = buf[4+n:]
	}
	c.buf[conn] = buf
}

func (c *commandCounter) take() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.cmds
	c.cmds = nil
	return out
}

// TestOneStatementPerCall: a successful Create, Patch or Delete, conditional or not, sends one
// command (a COM_QUERY: the statement with its arguments interpolated), with no read before the
// write and no separate prepare (one statement, one round trip).
func TestOneStatementPerCall(t *testing.T) {
	t.Parallel()
	raw := testurl.With(t, serverURL(t), "table", testenv.TableName(t), "max_open_conns", "1")
	cc := &commandCounter{}
	p := newProxy(t, testurl.Parse(t, raw).Host, cc.inspect)
	s, err := Open(t.Context(), testurl.Host(t, raw, p.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); dropTable(t, s.Table()) })
	ctx := t.Context()
	cc.take()
	steps := []struct {
		name string
		do   func() error
	}{
		{"Create", func() error { return s.Create(ctx, "k", map[string]any{"rev": 1}) }},
		{"Patch", func() error { return s.Patch(ctx, "k", map[string]any{"x": 1, "y": nil}, nil) }},
		{"conditional Patch", func() error {
			return s.Patch(ctx, "k", map[string]any{"rev": 2}, &store.Condition{Field: "rev", Value: 1})
		}},
		{"conditional Delete", func() error { return s.Delete(ctx, "k", &store.Condition{Field: "rev", Value: 2.0}) }},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := cc.take(); len(got) != 1 || got[0] != 3 {
			t.Errorf("%s sent commands %x, want one COM_QUERY (03)", st.name, got)
		}
	}
}

// TestCutConnection: when the network drops everything (a proxy that stops forwarding), an
// operation whose context has a deadline returns soon after it, instead of waiting for TCP.
func TestCutConnection(t *testing.T) {
	t.Parallel()
	raw := testurl.With(t, serverURL(t), "table", testenv.TableName(t), "timeout", "2s")
	p := newProxy(t, testurl.Parse(t, raw).Host)
	s, err := Open(t.Context(), testurl.Host(t, raw, p.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); dropTable(t, s.Table()) })
	cuttest.Run(t, s, p)
	var doc string
	if err := rawDB(t).QueryRowContext(t.Context(), "SELECT doc FROM `"+s.Table()+"` WHERE id = 'k'").Scan(&doc); err != nil {
		t.Fatal(err)
	}
	if doc != `{"rev":2}` && doc != `{"rev": 2}` {
		t.Errorf("document after the cuts: %s, want rev 2 (patched once, while the network was up)", doc)
	}
}
