package fencetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/fence"
)

// SQL is a database the tests write to through a table of fences of their own: resources are
// rows (name, term, value) of a table of their own too, both dropped when the test ends.
type SQL struct {
	DB     *sql.DB
	Fences fence.Table
	// Retryable says whether a transaction that failed with err may run again: a deadlock,
	// a serialization failure, SQLITE_BUSY. Race retries those.
	Retryable func(err error) bool

	resources string // the resources' table, quoted
}

// NewSQL creates, in db, a table of fences for d and a table of resources, with names of
// their own, dropped when the test ends.
func NewSQL(t *testing.T, db *sql.DB, d fence.Dialect, retryable func(error) bool) *SQL {
	t.Helper()
	suffix := randomSuffix(t)
	s := &SQL{DB: db, Fences: fence.Table{Dialect: d, Name: "lh_fences_" + suffix}, Retryable: retryable}
	s.resources = quote(d, "lh_fenced_"+suffix)
	ctx := t.Context()
	if err := s.Fences.Create(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := s.Fences.Create(ctx, db); err != nil {
		t.Fatalf("Create on an existing table: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, table := range []string{quote(d, s.Fences.Name), s.resources} {
			if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+table); err != nil {
				t.Errorf("drop table %s: %v", table, err)
			}
		}
	})
	if _, err := db.ExecContext(ctx, "CREATE TABLE "+s.resources+" (name VARCHAR(64) NOT NULL PRIMARY KEY, term BIGINT NOT NULL, value VARCHAR(64) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	return s
}

func randomSuffix(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func quote(d fence.Dialect, name string) string {
	if d == fence.MySQL {
		return "`" + name + "`"
	}
	return `"` + name + `"`
}

// q returns query with PostgreSQL's numbered placeholders in place of ?, on PostgreSQL.
func (s *SQL) q(query string) string {
	if s.Fences.Dialect != fence.PostgreSQL {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Resource returns the resource name: a row, created empty here, that Write writes in a
// transaction that checks the fence first. Write also reads the row's term, locked, before
// writing it, and fails when that term is above its own: a write after a higher term's, which
// the fence let through.
func (s *SQL) Resource(t *testing.T, name string) Resource {
	t.Helper()
	if _, err := s.DB.ExecContext(t.Context(), s.q("INSERT INTO "+s.resources+" (name, term, value) VALUES (?, 0, '')"), name); err != nil {
		t.Fatal(err)
	}
	return Resource{
		Write: func(ctx context.Context, term uint64, value string) error { return s.write(ctx, name, term, value) },
		Read: func(ctx context.Context) (string, error) {
			var v string
			err := s.DB.QueryRowContext(ctx, s.q("SELECT value FROM "+s.resources+" WHERE name = ?"), name).Scan(&v)
			return v, err
		},
	}
}

// errOutOfOrder marks a write that found a higher term's write before it.
var errOutOfOrder = errors.New("a write after a higher term's")

func (s *SQL) write(ctx context.Context, name string, term uint64, value string) error {
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := s.Fences.Check(ctx, tx, name, term); err != nil {
		return err
	}
	read := "SELECT term FROM " + s.resources + " WHERE name = ?"
	if s.Fences.Dialect != fence.SQLite { // SQLite's write lock, taken by the check, is enough
		read += " FOR UPDATE"
	}
	var prev uint64
	if err := tx.QueryRowContext(ctx, s.q(read), name).Scan(&prev); err != nil {
		return err
	}
	if prev > term {
		return fmt.Errorf("%w: %q under term %d after term %d", errOutOfOrder, value, term, prev)
	}
	if _, err := tx.ExecContext(ctx, s.q("UPDATE "+s.resources+" SET term = ?, value = ? WHERE name = ?"), term, value, name); err != nil {
		return err
	}
	return tx.Commit()
}

// FenceTerm returns the term the fence of resource holds.
func (s *SQL) FenceTerm(t *testing.T, resource string) uint64 {
	t.Helper()
	var term uint64
	if err := s.DB.QueryRowContext(t.Context(), s.q("SELECT term FROM "+quote(s.Fences.Dialect, s.Fences.Name)+" WHERE name = ?"), resource).Scan(&term); err != nil {
		t.Fatalf("the fence of %q: %v", resource, err)
	}
	return term
}

// check runs Check alone in a transaction, committed when it passes.
func (s *SQL) check(ctx context.Context, resource string, term uint64) error {
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := s.Fences.Check(ctx, tx, resource, term); err != nil {
		return err
	}
	return tx.Commit()
}

// Semantics checks F1: a fence takes its first term, then equal and higher ones, and refuses a
// lower one with a *fence.StaleError naming the resource and both terms, leaving the fence as
// it was; a transaction rolled back after its check leaves no trace; names are fences apart
// byte for byte (case and trailing spaces included, which MySQL's collations would fold).
func Semantics(t *testing.T, s *SQL) {
	t.Helper()
	ctx := t.Context()
	pass := func(resource string, term uint64) {
		t.Helper()
		if err := s.check(ctx, resource, term); err != nil {
			t.Fatalf("Check(%q, %d): %v", resource, term, err)
		}
	}
	stale := func(resource string, term, stored uint64) {
		t.Helper()
		err := s.check(ctx, resource, term)
		var se *fence.StaleError
		if !errors.As(err, &se) || !errors.Is(err, fence.ErrStale) {
			t.Fatalf("Check(%q, %d) with the fence at %d: %v, want a *fence.StaleError", resource, term, stored, err)
		}
		if *se != (fence.StaleError{Resource: resource, Term: term, Stored: stored}) {
			t.Errorf("Check(%q, %d): %+v, want the resource, the term and %d", resource, term, *se, stored)
		}
	}
	pass("report", 5) // no fence yet: any term
	pass("report", 5) // the same holding
	stale("report", 4, 5)
	stale("report", 1, 5)
	pass("report", 6)
	if got := s.FenceTerm(t, "report"); got != 6 {
		t.Errorf("fence of report at %d, want 6", got)
	}

	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Fences.Check(ctx, tx, "report", 9); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	pass("report", 7) // 9 was rolled back
	stale("report", 6, 7)

	pass("Report", 1)
	pass("report ", 1)
	pass("rapport-été", 2)
	stale("rapport-été", 1, 2)
	if got := s.FenceTerm(t, "report"); got != 7 {
		t.Errorf("fence of report at %d after checks of other names, want 7", got)
	}
}

// Race checks F2 under concurrency: rounds of transactions, each writing one resource under a
// term of its own, all started at once, in random order. In every round the highest term
// passes; the others pass or are refused naming a higher stored term; no write lands after a
// higher term's (each write reads the term it replaces); the resource and its fence end at the
// highest term. The first round races on a fence not created yet.
func Race(t *testing.T, s *SQL, writers, rounds int) {
	t.Helper()
	ctx := t.Context()
	r := s.Resource(t, "raced")
	for round := range rounds {
		base := uint64(round * writers)
		errs := make([]error, writers)
		attempts := make([]int, writers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i, p := range mathrand.Perm(writers) {
			term := base + uint64(p) + 1
			wg.Go(func() {
				<-start
				for {
					attempts[i]++
					err := r.Write(ctx, term, "v"+strconv.FormatUint(term, 10))
					if err != nil && !errors.Is(err, fence.ErrStale) && s.Retryable(err) && attempts[i] < 50 {
						continue
					}
					errs[i] = err
					return
				}
			})
		}
		close(start)
		wg.Wait()
		accepted, refused, retried := 0, 0, 0
		top := base + uint64(writers)
		for i, err := range errs {
			retried += attempts[i] - 1
			var se *fence.StaleError
			switch {
			case err == nil:
				accepted++
			case errors.As(err, &se):
				refused++
				if se.Stored <= se.Term || se.Stored > top || se.Resource != "raced" {
					t.Errorf("round %d: refusal %+v: the stored term must be above the write's, at most %d", round, *se, top)
				}
			default:
				t.Errorf("round %d: %v", round, err)
			}
		}
		v, err := r.Read(ctx)
		if err != nil || v != "v"+strconv.FormatUint(top, 10) {
			t.Errorf("round %d: resource %q, %v; want the highest term's write, v%d", round, v, err, top)
		}
		if got := s.FenceTerm(t, "raced"); got != top {
			t.Errorf("round %d: fence at %d, want %d", round, got, top)
		}
		t.Logf("round %d: %d writers, %d accepted, %d refused as stale, %d retries", round, writers, accepted, refused, retried)
		if t.Failed() {
			return
		}
	}
}
