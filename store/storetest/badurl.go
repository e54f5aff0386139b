package storetest

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/store"
)

// BadURLs checks that open refuses each URL of cases, a map from the URL to a text its error
// must hold (the parameter or the part at fault), and that no error holds secret (the password
// those URLs carry; "" when they carry none) (T4). A store open returns all the same is closed.
func BadURLs(t *testing.T, secret string, cases map[string]string, open func(ctx context.Context, rawURL string) (store.Store, error)) {
	t.Helper()
	hide := func(s string) string {
		if secret == "" {
			return s
		}
		return strings.ReplaceAll(s, secret, "xxxxx")
	}
	for _, raw := range slices.Sorted(maps.Keys(cases)) {
		want := cases[raw]
		s, err := open(t.Context(), raw)
		if err == nil {
			store.Close(s)
			t.Errorf("Open(%s) succeeded", hide(raw))
			continue
		}
		t.Log(hide(err.Error()))
		if secret != "" && strings.Contains(err.Error(), secret) {
			t.Errorf("T4: Open(%s): the error reveals the password: %s", hide(raw), hide(err.Error()))
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%s): error %q does not name %q", hide(raw), hide(err.Error()), want)
		}
		if store.NotReady(err) {
			t.Errorf("Open(%s): error %q is not a configuration error (store.ErrConfig): a caller would wait for it to go away (C7)", hide(raw), hide(err.Error()))
		}
	}
}
