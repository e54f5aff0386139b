package driver_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// TestDecodeObject: only a JSON object decodes; anything else is the backend's sentinel, saying
// what is wrong.
func TestDecodeObject(t *testing.T) {
	errNotJSON := errors.New("backend: value is not a JSON object")
	doc, err := driver.DecodeObject([]byte(`{"a": 1, "b": [true, null]}`), errNotJSON)
	if err != nil || doc["a"] != 1.0 || len(doc["b"].([]any)) != 2 {
		t.Errorf("object: %v, %v", doc, err)
	}
	for raw, want := range map[string]string{"null": "null", "[1]": "array", `"s"`: "string", "{": "unexpected end"} {
		doc, err := driver.DecodeObject([]byte(raw), errNotJSON)
		if !errors.Is(err, errNotJSON) || !strings.Contains(err.Error(), want) || doc != nil {
			t.Errorf("%s: %v, %v; want the sentinel and an error saying %q", raw, doc, err, want)
		}
	}
}

// TestDecodeRow: a row that is not a JSON object is an error naming the backend and the table,
// saying what is wrong and quoting the row's start.
func TestDecodeRow(t *testing.T) {
	doc, err := driver.DecodeRow("sql", "t1", []byte(`{"a": 1}`))
	if err != nil || doc["a"] != 1.0 {
		t.Errorf("object: %v, %v", doc, err)
	}
	for raw, want := range map[string]string{"[1]": "is not a JSON object: \"[1]\"", "null": "not a JSON object", "{x": "not valid JSON"} {
		doc, err := driver.DecodeRow("sql", "t1", []byte(raw))
		if err == nil || doc != nil || !strings.HasPrefix(err.Error(), "sql: the document in table t1 ") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, %v; want an error naming the backend and the table, saying %s", raw, doc, err, want)
		}
	}
}

// TestOpenWith: a backend's Open names the backend and the redacted URL in its errors, hides the
// URL's password from the driver's error and keeps that error reachable, and returns the store
// open gives.
func TestOpenWith(t *testing.T) {
	const pw = "pw-open-with-3"
	errDriver := errors.New("driver: login failed")
	open := func(_ context.Context, u *url.URL) (*url.URL, error) {
		if u.Query().Has("fail") {
			p, _ := u.User.Password()
			return nil, fmt.Errorf("%w for password %s", errDriver, p)
		}
		return u, nil
	}
	got, err := driver.OpenWith(t.Context(), "store/x", "x://u:"+pw+"@h/db", open)
	if err != nil || got.Host != "h" {
		t.Fatalf("OpenWith = %v, %v", got, err)
	}
	for raw, want := range map[string]string{
		"x://u:" + pw + "@h/db?fail=1": "store/x: open x://u:xxxxx@h/db?fail=1: driver: login failed for password xxxxx",
		"://u:" + pw + "@h":            "store/x: store: invalid URL",
	} {
		_, err := driver.OpenWith(t.Context(), "store/x", raw, open)
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), pw) {
			t.Errorf("OpenWith(%s): %v, want an error starting %q without the password", store.RedactString(raw), err, want)
		}
		if strings.Contains(raw, "fail") && !errors.Is(err, errDriver) {
			t.Errorf("OpenWith(%s): the driver's error is not reachable with errors.Is: %v", store.RedactString(raw), err)
		}
	}
}

// TestOpener: a failed open is a nil store.Store, not one holding a nil pointer.
func TestOpener(t *testing.T) {
	fail := driver.Opener(func(context.Context, *url.URL) (*driver.Portable, error) { return nil, errors.New("refused") })
	if s, err := fail(t.Context(), &url.URL{}); s != nil || err == nil {
		t.Errorf("failed open = %#v, %v; want a nil store and the error", s, err)
	}
	p := driver.New(nil)
	ok := driver.Opener(func(context.Context, *url.URL) (*driver.Portable, error) { return p, nil })
	if s, err := ok(t.Context(), &url.URL{}); s != store.Store(p) || err != nil {
		t.Errorf("open = %v, %v; want the store", s, err)
	}
}

// TestTakeParam: a backend's parameter is read, empty included, and removed; an absent one is
// the default.
func TestTakeParam(t *testing.T) {
	q := url.Values{"table": {""}, "sslmode": {"disable"}}
	if got := driver.TakeParam(q, "table", "dflt"); got != "" || q.Has("table") || !q.Has("sslmode") {
		t.Errorf("TakeParam = %q, leaving %v; want the empty value, removed", got, q)
	}
	if got := driver.TakeParam(q, "table", "dflt"); got != "dflt" {
		t.Errorf("TakeParam of an absent parameter = %q, want the default", got)
	}
}
