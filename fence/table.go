package fence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode/utf8"
)

// DefaultTable is the table of fences Check and Create use.
const DefaultTable = "leasehold_fences"

// MaxNameLength is the longest resource name a fence takes, in bytes: MySQL's key is a
// VARBINARY(255).
const MaxNameLength = 255

// Table is a table of fences in a SQL database: one row per resource, (name, term), the
// highest term seen for it.
type Table struct {
	Dialect Dialect
	// Name is the table's name, DefaultTable when empty: letters, digits and underscores, not
	// starting with a digit, at most 63 bytes, optionally qualified by a schema (or, on
	// MySQL, a database) as "schema.table". It is quoted as written: on PostgreSQL,
	// "Fences" is not "fences".
	Name string
}

// Execer runs a statement: a *sql.DB, *sql.Tx or *sql.Conn.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Check raises the fence of resource in the table DefaultTable to term, inside tx, or refuses
// with a *StaleError (wrapping ErrStale) when the fence holds a higher term: a later holding
// has written. It is Table{Dialect: d}.Check.
func Check(ctx context.Context, tx *sql.Tx, d Dialect, resource string, term uint64) error {
	return Table{Dialect: d}.Check(ctx, tx, resource, term)
}

// Create creates the table DefaultTable in db, if it does not exist. It is
// Table{Dialect: d}.Create.
func Create(ctx context.Context, db Execer, d Dialect) error {
	return Table{Dialect: d}.Create(ctx, db)
}

// DDL returns the statement that creates the table if it does not exist, for a migration tool.
func (t Table) DDL() (string, error) {
	table, err := t.quoted()
	if err != nil {
		return "", err
	}
	return t.Dialect.ddl(table), nil
}

// Create creates the table in db if it does not exist.
func (t Table) Create(ctx context.Context, db Execer) error {
	ddl, err := t.DDL()
	if err != nil {
		return err
	}
	if db == nil {
		return fmt.Errorf("fence: creating table %s: db is nil", t.name())
	}
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		// PostgreSQL may refuse a CREATE TABLE IF NOT EXISTS racing another one (a duplicate
		// key in its catalog): the table is there all the same.
		if t.exists(ctx, db) {
			return nil
		}
		return fmt.Errorf("fence: creating table %s: %w", t.name(), err)
	}
	return nil
}

func (t Table) exists(ctx context.Context, db Execer) bool {
	table, _ := t.quoted()
	_, err := db.ExecContext(ctx, "SELECT 1 FROM "+table+" WHERE 1 = 0")
	return err == nil
}

// Check raises the fence of resource to term, inside tx, or refuses with a *StaleError
// (wrapping ErrStale) when the fence holds a higher term: a later holding has written. An equal
// term is the same holding's, and passes. A resource checked for the first time gets a fence.
//
// The fence's row stays locked until tx ends: a concurrent transaction's Check on the same
// resource waits for it. Check first, then write, then commit; roll back on any error, ErrStale
// included (the transaction's earlier writes must not commit). term is a term of the
// election (locker's Held.Term, cluster.TermOf): 0, the term of no leadership, is refused, and
// so is a term above 2⁶³ − 1, which the column cannot hold.
func (t Table) Check(ctx context.Context, tx *sql.Tx, resource string, term uint64) error {
	table, err := t.quoted()
	if err != nil {
		return err
	}
	if err := checkResource(resource); err != nil {
		return err
	}
	if term == 0 {
		return fmt.Errorf("fence: resource %q: term 0 is no leadership's term (terms start at 1; cluster.TermOf returns 0 outside a leadership)", resource)
	}
	if term > math.MaxInt64 {
		return fmt.Errorf("fence: resource %q: term %d is above %d, the largest a BIGINT column holds", resource, term, int64(math.MaxInt64))
	}
	if tx == nil {
		return fmt.Errorf("fence: resource %q: tx is nil: the check runs inside the transaction that writes", resource)
	}
	args := t.Dialect.upsertArgs(resource, int64(term))
	var stored int64
	if t.Dialect == MySQL {
		if _, err = tx.ExecContext(ctx, t.Dialect.upsert(table), args...); err == nil {
			err = tx.QueryRowContext(ctx, t.Dialect.lockedRead(table), resource).Scan(&stored)
		}
	} else {
		err = tx.QueryRowContext(ctx, t.Dialect.upsert(table), args...).Scan(&stored)
	}
	if err != nil {
		return fmt.Errorf("fence: resource %q: checking term %d in table %s: %w", resource, term, t.name(), err)
	}
	if stored < 0 || uint64(stored) < term {
		// The upsert stores the larger of the two terms: anything lower means the table is not
		// what Create made (or someone else writes to it).
		return fmt.Errorf("fence: resource %q: table %s holds term %d after raising it to %d", resource, t.name(), stored, term)
	}
	if uint64(stored) > term {
		return &StaleError{Resource: resource, Term: term, Stored: uint64(stored)}
	}
	return nil
}

func (t Table) name() string {
	if t.Name == "" {
		return DefaultTable
	}
	return t.Name
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// quoted checks the dialect and the table's name, and returns the name quoted for the dialect.
func (t Table) quoted() (string, error) {
	if err := t.Dialect.check(); err != nil {
		return "", err
	}
	name := t.name()
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return "", fmt.Errorf("fence: table name %q: more than one dot (schema.table at most)", name)
	}
	for _, p := range parts {
		if !identifier.MatchString(p) {
			return "", fmt.Errorf("fence: table name %q: %q is not letters, digits and underscores, 1 to 63 bytes, not starting with a digit", name, p)
		}
	}
	return t.Dialect.quote(name), nil
}

// errEmptyResource is the error of an empty resource name.
var errEmptyResource = errors.New("fence: the resource name is empty")

// checkResource refuses the names a column cannot hold in every dialect, so that a resource
// name works the same on each.
func checkResource(resource string) error {
	switch {
	case resource == "":
		return errEmptyResource
	case len(resource) > MaxNameLength:
		return fmt.Errorf("fence: resource %.40q...: %d bytes, more than %d", resource, len(resource), MaxNameLength)
	case !utf8.ValidString(resource):
		return fmt.Errorf("fence: resource %q: not valid UTF-8", resource)
	case strings.ContainsRune(resource, 0):
		return fmt.Errorf("fence: resource %q: contains a NUL byte, which PostgreSQL's text cannot hold", resource)
	}
	return nil
}
