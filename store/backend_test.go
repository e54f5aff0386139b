package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/store"
)

// TestCheckCall: an ended context and an empty key fail an operation before it starts (T3).
func TestCheckCall(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := store.CheckCall(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Errorf("ended context: %v, want context.Canceled", err)
	}
	if err := store.CheckCall(t.Context(), ""); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("empty key: %v, want ErrInvalid", err)
	}
	if err := store.CheckCall(t.Context(), "k"); err != nil {
		t.Errorf("good call: %v", err)
	}
}

// TestDecodeObject: only a JSON object decodes; anything else is the backend's sentinel, saying
// what is wrong.
func TestDecodeObject(t *testing.T) {
	errNotJSON := errors.New("backend: value is not a JSON object")
	doc, err := store.DecodeObject([]byte(`{"a": 1, "b": [true, null]}`), errNotJSON)
	if err != nil || doc["a"] != 1.0 || len(doc["b"].([]any)) != 2 {
		t.Errorf("object: %v, %v", doc, err)
	}
	for raw, want := range map[string]string{"null": "null", "[1]": "array", `"s"`: "string", "{": "unexpected end"} {
		doc, err := store.DecodeObject([]byte(raw), errNotJSON)
		if !errors.Is(err, errNotJSON) || !strings.Contains(err.Error(), want) || doc != nil {
			t.Errorf("%s: %v, %v; want the sentinel and an error saying %q", raw, doc, err, want)
		}
	}
}
