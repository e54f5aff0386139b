package driver_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// TestCheckTableName: plain identifiers up to the limit pass; anything that would need quoting,
// or is too long, fails naming the parameter and the name.
func TestCheckTableName(t *testing.T) {
	for _, name := range []string{"t", "_t", "leasehold_registry", "T9_x", strings.Repeat("a", 63)} {
		if err := driver.CheckTableName(name, 63); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	for _, name := range []string{"", "9t", "no-dash", "a b", "t;drop", `t"`, "é", strings.Repeat("a", 64)} {
		err := driver.CheckTableName(name, 63)
		if err == nil || !strings.Contains(err.Error(), "parameter table") || !strings.Contains(err.Error(), "at most 63") {
			t.Errorf("%q: %v, want an error naming the table parameter and the limit", name, err)
		}
	}
}

// TestInserted: an INSERT that inserted no row is ErrExists; its error is kept as it is.
func TestInserted(t *testing.T) {
	boom := errors.New("disk full")
	if err := driver.Inserted(1, nil); err != nil {
		t.Errorf("a row inserted: %v", err)
	}
	if err := driver.Inserted(0, nil); !errors.Is(err, store.ErrExists) {
		t.Errorf("no row inserted: %v, want ErrExists", err)
	}
	if err := driver.Inserted(0, boom); err != boom {
		t.Errorf("a failed statement: %v, want its error", err)
	}
}

type serverError struct{ code int }

func (e *serverError) Error() string { return fmt.Sprintf("server error %d", e.code) }

// TestTableError: a server error names the backend and the table; an operation its context
// ended has the context's error too; other errors are kept as they are.
func TestTableError(t *testing.T) {
	native := fmt.Errorf("exec: %w", &serverError{1146})
	err := driver.TableError[*serverError](t.Context(), native, "sql", "t1")
	var se *serverError
	if !errors.As(err, &se) || err.Error() != "sql: table t1: exec: server error 1146" {
		t.Errorf("server error: %v", err)
	}
	other := errors.New("broken pipe")
	if err := driver.TableError[*serverError](t.Context(), other, "sql", "t1"); err != other {
		t.Errorf("another error: %v, want it as it is", err)
	}
	if err := driver.TableError[*serverError](t.Context(), nil, "sql", "t1"); err != nil {
		t.Errorf("no error: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := driver.TableError[*serverError](ctx, other, "sql", "t1"); !errors.Is(err, context.Canceled) || !errors.Is(err, other) {
		t.Errorf("an ended context: %v, want context.Canceled and the error", err)
	}
}
