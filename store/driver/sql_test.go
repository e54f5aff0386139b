package driver_test

import (
	"errors"
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
