package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// OpenFunc opens a store from a parsed URL. The URL may carry credentials: an OpenFunc must
// never put them in an error or a log line (use [Redact]).
type OpenFunc func(ctx context.Context, u *url.URL) (Store, error)

// Backend is a store backend as [Open] and an application's configuration know it: a backend's
// package registers one, with [Register], from init. The URL's query parameters are its
// configuration; a configuration's service of type ServiceType gives them as its url
// parameter, and Params beside it.
type Backend struct {
	// Schemes are the URL schemes the backend opens ("postgres", "postgresql").
	Schemes []string
	// Open opens a store from a URL of one of the schemes. Its errors need not name the URL:
	// its callers add it, redacted, and hide the URL's secrets from them. The store it returns
	// is the portable one of package store/driver, or a type embedding it.
	Open OpenFunc
	// ServiceType is the service type configurations name to open such a store from a url
	// parameter ("Webda/PostgresStore"); empty when the backend has none.
	ServiceType string
	// Example is a URL of the expected form, shown when a service's url parameter is missing.
	Example string
	// Params are the service's parameters besides url ("table"): each, when given, sets the
	// URL's query parameter of the same name, replacing the URL's own.
	Params []string
}

var (
	backendsMu sync.RWMutex
	backends   = map[string]Backend{} // by scheme
)

// Register makes Open handle URLs of b's schemes, and makes b's service type known to
// applications. It panics when b has no scheme, no Open, an empty scheme, a scheme or a service
// type already registered, or a parameter named url: two backends claiming one name is a
// programming error.
func Register(b Backend) {
	if len(b.Schemes) == 0 || b.Open == nil {
		panic("store: Register with no scheme or a nil Open")
	}
	if slices.Contains(b.Params, "url") || (len(b.Params) > 0 && b.ServiceType == "") {
		panic(fmt.Sprintf("store: Register %v: parameters need a service type, and url is its own", b.Schemes))
	}
	b.Schemes = slices.Clone(b.Schemes)
	for i, s := range b.Schemes {
		b.Schemes[i] = strings.ToLower(s)
		if s == "" {
			panic("store: Register with an empty scheme")
		}
	}
	backendsMu.Lock()
	defer backendsMu.Unlock()
	for _, s := range b.Schemes {
		if _, dup := backends[s]; dup {
			panic(fmt.Sprintf("store: scheme %q registered twice", s))
		}
	}
	for _, o := range backends {
		if b.ServiceType != "" && o.ServiceType == b.ServiceType {
			panic(fmt.Sprintf("store: service type %q registered twice", b.ServiceType))
		}
	}
	for _, s := range b.Schemes {
		backends[s] = b
	}
}

// Schemes returns the registered URL schemes, sorted.
func Schemes() []string {
	backendsMu.RLock()
	defer backendsMu.RUnlock()
	return slices.Sorted(maps.Keys(backends))
}

// Backends returns the registered backends, each once, in the order of their first schemes:
// for a program that lists what it can open, or makes a service type of each backend's
// ServiceType (package leasehold's URLStore does).
func Backends() []Backend {
	backendsMu.RLock()
	defer backendsMu.RUnlock()
	var out []Backend
	for _, s := range slices.Sorted(maps.Keys(backends)) {
		if b := backends[s]; b.Schemes[0] == s {
			out = append(out, b)
		}
	}
	return out
}

// Open opens the store named by rawURL through the opener registered for its scheme. Import a
// backend's package (for its init) to register its scheme; the core module registers mem and
// file when package leasehold or the memory and file packages are imported. The returned store
// may hold connections: close it with [Close] when done.
func Open(ctx context.Context, rawURL string) (Store, error) {
	u, err := ParseURL(rawURL)
	if err != nil {
		return nil, ConfigError(err)
	}
	backendsMu.RLock()
	b, ok := backends[strings.ToLower(u.Scheme)]
	backendsMu.RUnlock()
	if !ok {
		return nil, ConfigError(fmt.Errorf("store: unknown URL scheme %q in %s (known: %s)",
			u.Scheme, Redact(u), strings.Join(Schemes(), ", ")))
	}
	s, err := b.Open(ctx, u)
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
