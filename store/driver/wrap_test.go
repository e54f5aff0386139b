package driver_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// nativeError stands for a driver's error type (a *pgconn.PgError, a redis.Error...).
type nativeError struct{ Code string }

func (e *nativeError) Error() string { return "native error " + e.Code }

// T3: a sentinel wrapped with a native error and then with the key is found by errors.Is, and
// both the native error and the key by errors.As; the text names the key, the operation, the
// sentinel and the native error.
func TestWrapKeyAndWrap(t *testing.T) {
	native := &nativeError{Code: "40001"}
	err := driver.WrapKey("patch", "cluster:leader", driver.Wrap(store.ErrConditionFailed, native))

	if !errors.Is(err, store.ErrConditionFailed) {
		t.Errorf("errors.Is(%v, ErrConditionFailed) = false", err)
	}
	if errors.Is(err, store.ErrNotFound) {
		t.Errorf("errors.Is(%v, ErrNotFound) = true", err)
	}
	var ne *nativeError
	if !errors.As(err, &ne) || ne != native {
		t.Errorf("errors.As(%v, *nativeError) did not find the native error", err)
	}
	var ke *store.KeyError
	if !errors.As(err, &ke) || ke.Key != "cluster:leader" || ke.Op != "patch" {
		t.Errorf("errors.As(%v, *KeyError) = %+v, want Op patch, Key cluster:leader", err, ke)
	}
	for _, want := range []string{`"cluster:leader"`, "patch", "condition failed", "native error 40001"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestWrapKey(t *testing.T) {
	if err := driver.WrapKey("get", "k", nil); err != nil {
		t.Errorf("WrapKey(nil) = %v, want nil", err)
	}
	// Wrapping twice (a store's helper, then its method) must not name the key twice or hide
	// the first operation.
	once := driver.WrapKey("get", "k", store.ErrNotFound)
	twice := driver.WrapKey("delete", "k", fmt.Errorf("retrying: %w", once))
	if strings.Count(twice.Error(), `"k"`) != 1 {
		t.Errorf("twice-wrapped error %q names the key more than once", twice)
	}
	var ke *store.KeyError
	if !errors.As(twice, &ke) || ke.Op != "get" || !errors.Is(twice, store.ErrNotFound) {
		t.Errorf("twice-wrapped error %v lost the first KeyError or the sentinel", twice)
	}
	// Every sentinel survives WrapKey.
	for _, s := range []error{store.ErrNotFound, store.ErrExists, store.ErrConditionFailed, store.ErrInvalid} {
		if err := driver.WrapKey("create", "k", s); !errors.Is(err, s) || err.Error() != `store: create "k": `+s.Error() {
			t.Errorf("WrapKey(%v) = %q", s, err)
		}
	}
}

func TestWrap(t *testing.T) {
	if err := driver.Wrap(store.ErrExists, nil); err != store.ErrExists {
		t.Errorf("Wrap(ErrExists, nil) = %v, want ErrExists itself", err)
	}
	native := fmt.Errorf("dial: %w", &nativeError{Code: "x"})
	err := driver.Wrap(store.ErrNotFound, native)
	var ne *nativeError
	if !errors.Is(err, store.ErrNotFound) || !errors.Is(err, native) || !errors.As(err, &ne) {
		t.Errorf("Wrap(ErrNotFound, %v) = %v: sentinel or native error unreachable", native, err)
	}
	if err.Error() != "store: not found: dial: native error x" {
		t.Errorf("Wrap text = %q", err)
	}
}
