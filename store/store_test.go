package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/store"
)

// Sentinels carry the package prefix (docs/design.md) and are distinct.
func TestSentinels(t *testing.T) {
	all := []error{store.ErrNotFound, store.ErrExists, store.ErrConditionFailed, store.ErrInvalid}
	for i, a := range all {
		if !strings.HasPrefix(a.Error(), "store: ") {
			t.Errorf("%q lacks the store: prefix", a)
		}
		for j, b := range all {
			if i != j && errors.Is(a, b) {
				t.Errorf("errors.Is(%v, %v) = true", a, b)
			}
		}
	}
}

func TestConditionString(t *testing.T) {
	if got := (*store.Condition)(nil).String(); got != "<none>" {
		t.Errorf("nil Condition String() = %q", got)
	}
	if got := (&store.Condition{Field: "rev", Value: "r1"}).String(); !strings.Contains(got, "rev") || !strings.Contains(got, "r1") {
		t.Errorf("Condition String() = %q, want the field and the value", got)
	}
}
