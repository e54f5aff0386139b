package store_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/memory"
)

// dialError stands for a driver's own error type, which must stay reachable through Open.
type dialError struct{ msg string }

func (e *dialError) Error() string { return e.msg }

// Openers for these tests, registered once per test binary (the registry has no removal).
func init() {
	store.Register(store.Backend{Schemes: []string{"h1fail"}, Open: func(_ context.Context, u *url.URL) (store.Store, error) {
		return nil, &dialError{msg: "connection refused"}
	}})
	// Like a careless driver: its error quotes the whole URL, secrets included.
	store.Register(store.Backend{Schemes: []string{"h1leak"}, Open: func(_ context.Context, u *url.URL) (store.Store, error) {
		return nil, &dialError{msg: fmt.Sprintf("cannot dial %s (raw %q, password %s)", u, u.RawQuery, passwordOf(u))}
	}})
	store.Register(store.Backend{Schemes: []string{"H1OK", "h1ok2"}, ServiceType: "test/H1OK", Params: []string{"p"},
		Open: func(_ context.Context, u *url.URL) (store.Store, error) { return memory.New(), nil }})
}

func passwordOf(u *url.URL) string {
	p, _ := u.User.Password()
	return p
}

func TestOpen(t *testing.T) {
	s, err := store.Open(t.Context(), "h1ok://anything")
	if err != nil || s == nil {
		t.Fatalf("Open(h1ok://) = %v, %v", s, err)
	}
	// Schemes are case-insensitive, at registration and in URLs.
	if _, err := store.Open(t.Context(), "H1Ok://anything"); err != nil {
		t.Errorf("Open with an upper-case scheme: %v", err)
	}
}

// T4: an unknown scheme's error names it and lists the known ones.
func TestOpenUnknownSchemeListsKnown(t *testing.T) {
	_, err := store.Open(t.Context(), "nosuch://host/db")
	if err == nil {
		t.Fatal("Open(nosuch://) succeeded")
	}
	for _, want := range []string{`"nosuch"`, "h1fail", "h1leak", "h1ok", "mem"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if got := store.Schemes(); !isSorted(got) {
		t.Errorf("Schemes() = %v, not sorted", got)
	}
}

func isSorted(s []string) bool {
	for i := 1; i < len(s); i++ {
		if s[i-1] > s[i] {
			return false
		}
	}
	return true
}

func TestOpenErrors(t *testing.T) {
	for _, c := range []struct {
		url  string
		want string
	}{
		{"", "empty URL"},
		{"host/db", "no scheme"},
		{"//host/db", "no scheme"},
		{"postgres://u@host:badport/db", `invalid port ":badport"`},
		{"h1fail://host/db", "h1fail://host/db: connection refused"},
	} {
		t.Run(c.url, func(t *testing.T) {
			_, err := store.Open(t.Context(), c.url)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Open(%q) = %v, want an error mentioning %q", c.url, err, c.want)
			}
		})
	}
}

// T3, T4: an opener's error stays reachable with errors.As through Open.
func TestOpenKeepsOpenerError(t *testing.T) {
	_, err := store.Open(t.Context(), "h1leak://u:s3cret@host/db")
	var de *dialError
	if !errors.As(err, &de) {
		t.Fatalf("Open error %v: the opener's *dialError is not reachable with errors.As", err)
	}
}

// T4: a credential never appears in an error, whatever fails: the scheme, the URL's syntax
// (including when an unescaped character in the password misleads the parser), or the opener.
func TestOpenNeverShowsSecrets(t *testing.T) {
	for _, c := range []struct {
		name    string
		url     string
		secrets []string
	}{
		{"unknown scheme, password", "nosuch://user:s3cret@host/db", []string{"s3cret"}},
		{"unknown scheme, password param", "nosuch://host/db?sslmode=disable&password=s3cret", []string{"s3cret"}},
		{"unknown scheme, other secret params", "nosuch://host/db?Token=t0ken1&secret_key=sk3y&apiKey=ak3y&access-key=acc3ss&authToken=au7h&pwd=pw0rd",
			[]string{"t0ken1", "sk3y", "ak3y", "acc3ss", "au7h", "pw0rd"}},
		{"unknown scheme, escaped password", "nosuch://user:s3%40cret@host/db", []string{"s3@cret", "s3%40cret"}},
		{"bad port", "postgres://u:s3cret@host:badport/db", []string{"s3cret"}},
		{"bad port, password param", "postgres://host:badport/db?password=s3cret", []string{"s3cret"}},
		{"bad host", "postgres://u:s3cret@ho st/db", []string{"s3cret"}},
		{"bad escape in host", "postgres://u:s3cret@h%zzost/db", []string{"s3cret"}},
		{"control character", "postgres://u:s3cret\x7f@host/db", []string{"s3cret"}},
		{"space in password", "postgres://u:s3 cret@host/db", []string{"s3 cret", "s3", "cret"}},
		// Regressions: url.Parse quoted a piece of these passwords in its error.
		{"slash in password", "postgres://u:s3c/ret@host/db", []string{"s3c", "ret"}},
		{"question mark in password", "mysql://u:pa?ss@host/db", []string{"pa", "ss@"}},
		{"hash in password", "mysql://u:pa#ss@host/db", []string{"pa", "ss@"}},
		{"bad escape in password", "postgres://u:s3c%zzret@host/db", []string{"%zz", "s3c", "ret"}},
		// Regressions: these parse, but not as meant, so Redact did not see the password.
		{"numeric password with slash", "nosuch://u:12345/x9@host/db", []string{"12345", "x9"}},
		{"no slashes after the scheme", "user:s3cret@host/db", []string{"s3cret"}},
		// Regressions: the opener's own error quoted the URL.
		{"opener error quotes the password", "h1leak://u:s3cret@host/db", []string{"s3cret"}},
		{"opener error quotes an escaped password", "h1leak://u:s3%2Fcr%40t@host/db", []string{"s3/cr@t", "s3%2Fcr%40t"}},
		{"opener error quotes the password param", "h1leak://host/db?password=s3cret&x=1", []string{"s3cret"}},
		{"opener error quotes an escaped param", "h1leak://host/db?password=s3+c%26ret", []string{"s3 c&ret", "s3+c%26ret"}},
		{"opener failure", "h1fail://u:s3cret@host/db?password=p4ss", []string{"s3cret", "p4ss"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := store.Open(t.Context(), c.url)
			if err == nil {
				t.Fatalf("Open(%q) succeeded", c.url)
			}
			for _, s := range c.secrets {
				if strings.Contains(err.Error(), s) {
					t.Errorf("Open error %q shows the secret %q", err, s)
				}
			}
			// RedactString is what callers log: it must hide the same.
			for _, s := range c.secrets {
				if r := store.RedactString(c.url); strings.Contains(r, s) {
					t.Errorf("RedactString(%q) = %q shows the secret %q", c.url, r, s)
				}
			}
		})
	}
}

func TestParseURL(t *testing.T) {
	u, err := store.ParseURL("postgres://u:p@host/db")
	if err != nil || u.Scheme != "postgres" || u.Host != "host" {
		t.Fatalf("ParseURL = %v, %v", u, err)
	}
	if _, err := store.ParseURL("postgres://u:s3cret@host:bad/db"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("ParseURL of a bad URL = %v, want an error without the password", err)
	}
}

// TestBackends: a backend is listed once, with its schemes lower-cased and its service type.
func TestBackends(t *testing.T) {
	n := 0
	for _, b := range store.Backends() {
		if slices.Contains(b.Schemes, "h1ok") {
			n++
			if !slices.Equal(b.Schemes, []string{"h1ok", "h1ok2"}) || b.ServiceType != "test/H1OK" || !slices.Equal(b.Params, []string{"p"}) {
				t.Errorf("Backends() has %+v, want the registered h1ok backend", b)
			}
		}
	}
	if n != 1 {
		t.Errorf("the h1ok backend is listed %d times, want once", n)
	}
	if _, err := store.Open(t.Context(), "h1ok2://x"); err != nil {
		t.Errorf("Open by the second scheme: %v", err)
	}
}

func TestRegisterPanics(t *testing.T) {
	ok := func(context.Context, *url.URL) (store.Store, error) { return memory.New(), nil }
	scheme := fmt.Sprintf("h1dup%x", rand.Uint64())
	store.Register(store.Backend{Schemes: []string{scheme}, Open: ok, ServiceType: "test/" + scheme})
	for _, c := range []struct {
		name string
		b    store.Backend
		want string
	}{
		{"duplicate", store.Backend{Schemes: []string{scheme}, Open: ok}, scheme},
		{"duplicate in another case", store.Backend{Schemes: []string{strings.ToUpper(scheme)}, Open: ok}, scheme},
		{"duplicate of mem", store.Backend{Schemes: []string{"h1new", "mem"}, Open: ok}, "mem"},
		{"duplicate service type", store.Backend{Schemes: []string{"h1new"}, Open: ok, ServiceType: "test/" + scheme}, "test/" + scheme},
		{"empty scheme", store.Backend{Schemes: []string{""}, Open: ok}, "empty scheme"},
		{"no scheme", store.Backend{Open: ok}, "no scheme"},
		{"nil opener", store.Backend{Schemes: []string{"h1nil"}}, "nil"},
		{"url parameter", store.Backend{Schemes: []string{"h1url"}, Open: ok, ServiceType: "test/H1url", Params: []string{"url"}}, "url"},
		{"parameters without a service type", store.Backend{Schemes: []string{"h1par"}, Open: ok, Params: []string{"p"}}, "service type"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatalf("Register(%+v) did not panic", c.b)
				}
				if !strings.Contains(fmt.Sprint(r), c.want) {
					t.Errorf("panic %q does not mention %q", r, c.want)
				}
			}()
			store.Register(c.b)
		})
	}
	if _, err := store.Open(t.Context(), "h1new://x"); err == nil {
		t.Error("a backend whose registration panicked opens its other scheme")
	}
}

type closer struct {
	*memory.Store
	closed int
	err    error
}

func (c *closer) Close() error { c.closed++; return c.err }

func TestClose(t *testing.T) {
	if err := store.Close(memory.New()); err != nil {
		t.Errorf("Close of a store without Close: %v", err)
	}
	c := &closer{Store: memory.New(), err: errors.New("boom")}
	if err := store.Close(c); err != c.err || c.closed != 1 {
		t.Errorf("Close = %v after %d calls, want the store's error after 1", err, c.closed)
	}
}
