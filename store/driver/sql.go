package driver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/leasehold/leasehold/store"
)

// The SQL backends share these.

// CheckTableName returns an error naming the table parameter when name is not a plain SQL
// identifier of at most maxLen characters: letters, digits and underscores, starting with a
// letter or an underscore. The SQL backends accept only such names, so that a name can be put
// in SQL text safely and means the same quoted or not; maxLen is the server's limit.
func CheckTableName(name string, maxLen int) error {
	ok := name != "" && len(name) <= maxLen
	for i, c := range name {
		if !ok {
			break
		}
		ok = c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9'
	}
	if !ok {
		return fmt.Errorf("parameter table: %q is not a valid table name (letters, digits and underscores, starting with a letter or underscore, at most %d)", name, maxLen)
	}
	return nil
}

// DecodeRow reads the document of a row of an SQL backend's table. A row that is not a JSON
// object (another program wrote it) is an error naming the backend ("postgres") and the table,
// quoting the start of the row, with ErrNotObject in its chain.
func DecodeRow(backend, table string, raw []byte) (map[string]any, error) {
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil || doc == nil {
		what := "not a JSON object"
		if !json.Valid(raw) {
			what = "not valid JSON"
		}
		return nil, notObject{fmt.Errorf("%s: the document in table %s is %s: %.60q", backend, table, what, raw)}
	}
	return doc, nil
}

// TableError is an SQL backend's explanation of an operation's error: the context's error
// joined to it (see ContextError), and the backend's name ("mysql") and its table put before a
// server error, one of type E.
func TableError[E error](ctx context.Context, err error, backend, table string) error {
	err = ContextError(ctx, err)
	var native E
	if errors.As(err, &native) {
		return fmt.Errorf("%s: table %s: %w", backend, table, err)
	}
	return err
}

// Inserted is the answer of a Create made as an INSERT that does nothing on a conflict: err, or
// ErrExists when the statement inserted no row (n).
func Inserted(n int64, err error) error {
	if err == nil && n == 0 {
		return store.ErrExists
	}
	return err
}

// RowsAffected returns the number of rows a database/sql statement changed, or the error of
// the statement.
func RowsAffected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
