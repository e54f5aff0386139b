package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// OpenFunc opens a store from a parsed URL. The URL may carry credentials: an OpenFunc must
// never put them in an error or a log line (use [Redact]).
type OpenFunc func(ctx context.Context, u *url.URL) (Store, error)

var (
	openersMu sync.RWMutex
	openers   = map[string]OpenFunc{}
)

// RegisterOpener makes Open handle URLs of the given scheme. Backends call it from init. It
// panics when the scheme is empty or already registered, as two backends claiming one scheme
// is a programming error.
func RegisterOpener(scheme string, open OpenFunc) {
	scheme = strings.ToLower(scheme)
	if scheme == "" || open == nil {
		panic("store: RegisterOpener with an empty scheme or a nil OpenFunc")
	}
	openersMu.Lock()
	defer openersMu.Unlock()
	if _, dup := openers[scheme]; dup {
		panic(fmt.Sprintf("store: RegisterOpener called twice for scheme %q", scheme))
	}
	openers[scheme] = open
}

// Schemes returns the registered URL schemes, sorted.
func Schemes() []string {
	openersMu.RLock()
	defer openersMu.RUnlock()
	out := make([]string, 0, len(openers))
	for s := range openers {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Open opens the store named by rawURL through the opener registered for its scheme. Import a
// backend's package (for its init) to register its scheme; the core module registers mem and
// file when package leasehold or the memory and file packages are imported. The returned store
// may hold connections: close it with [Close] when done.
func Open(ctx context.Context, rawURL string) (Store, error) {
	u, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	openersMu.RLock()
	open, ok := openers[strings.ToLower(u.Scheme)]
	openersMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("store: unknown URL scheme %q in %s (known: %s)",
			u.Scheme, Redact(u), strings.Join(Schemes(), ", "))
	}
	s, err := open(ctx, u)
	if err != nil {
		// The opener should not quote its URL's secrets, but a driver's error might: hide them
		// here too, keeping the error itself reachable with errors.Is and errors.As.
		return nil, fmt.Errorf("store: open %s: %w", Redact(u), redactError(err, secrets(u)))
	}
	return s, nil
}

// ParseURL parses a store URL. Unlike url.Parse, its errors never quote the URL, which may hold
// a password.
func ParseURL(rawURL string) (*url.URL, error) {
	if rawURL == "" {
		return nil, errors.New("store: empty URL")
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("store: invalid URL: %v", scrub(err.Error(), rawURL))
	}
	if u.Scheme == "" {
		return nil, fmt.Errorf("store: URL %s has no scheme (known: %s)", Redact(u), strings.Join(Schemes(), ", "))
	}
	return u, nil
}

// Close closes s if it holds resources (implements interface{ Close() error }).
func Close(s Store) error {
	if c, ok := s.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}
