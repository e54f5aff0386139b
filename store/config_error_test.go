package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/leasehold/leasehold/store"
)

// An Open error waiting cannot cure (an empty or unparsable URL, an unknown scheme) has
// ErrConfig in its chain, its text unchanged; NotReady tells the others.
func TestOpenConfigErrors(t *testing.T) {
	for _, raw := range []string{"", "bogus://x", "://x", "no-scheme"} {
		_, err := store.Open(context.Background(), raw)
		if err == nil || !errors.Is(err, store.ErrConfig) || store.NotReady(err) {
			t.Errorf("Open(%q) = %v, want an error with ErrConfig", raw, err)
		}
	}
	base := errors.New("dial tcp: connection refused")
	if !store.NotReady(fmt.Errorf("open: %w", base)) || store.NotReady(nil) {
		t.Error("NotReady of a dial error is false, or of nil true")
	}
	wrapped := store.ConfigError(base)
	if wrapped.Error() != base.Error() || !errors.Is(wrapped, base) || !errors.Is(wrapped, store.ErrConfig) || store.NotReady(wrapped) {
		t.Errorf("ConfigError(%v) = %v: want its text, its chain and ErrConfig", base, wrapped)
	}
	if store.ConfigError(nil) != nil || store.NotReady(fmt.Errorf("%w: x", store.ErrInvalid)) {
		t.Error("ConfigError(nil) is not nil, or an ErrInvalid error is NotReady")
	}
}
