package leasehold

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/leasehold/leasehold/store"
)

// ClosableStore is a store that holds resources (connections, a file) until Close.
type ClosableStore interface {
	store.Store
	Close() error
}

// URLStoreKind describes a service type whose services open a store of type S from their url
// parameter: the networked and SQL backends' Webda/PostgresStore, Webda/RedisStore and so on.
type URLStoreKind[S ClosableStore] struct {
	// Type is the service type's name, "Webda/PostgresStore": errors name it.
	Type string
	// Schemes are the URL schemes the type accepts, lower case; an error lists them.
	Schemes []string
	// Example is a URL of the expected form, shown when the url parameter is missing.
	Example string
	// Open opens the store. Its errors need not name the URL: Init adds it, redacted.
	Open func(ctx context.Context, u *url.URL) (S, error)
}

var (
	urlKindsMu sync.RWMutex
	urlKinds   = map[reflect.Type]any{} // store type S → URLStoreKind[S]
)

// RegisterURLStoreType registers kind.Type as a service type made by factory, whose services
// embed a [URLStore] of S. The kind is kept for S, so that a service knows its type's name
// even before Init (a zero Service used without the application names it in its errors). It
// panics on a second kind for the same S, an empty type name or no scheme, which are
// programming errors.
func RegisterURLStoreType[S ClosableStore](kind URLStoreKind[S], factory func() Service) {
	if kind.Type == "" || len(kind.Schemes) == 0 || kind.Open == nil {
		panic("leasehold: RegisterURLStoreType with an empty type name, no scheme or no Open")
	}
	t := reflect.TypeFor[S]()
	urlKindsMu.Lock()
	if _, dup := urlKinds[t]; dup {
		urlKindsMu.Unlock()
		panic(fmt.Sprintf("leasehold: RegisterURLStoreType called twice for %v", t))
	}
	urlKinds[t] = kind
	urlKindsMu.Unlock()
	RegisterServiceType(kind.Type, factory)
}

// urlKind returns the kind registered for S; ok is false when none was.
func urlKind[S ClosableStore]() (URLStoreKind[S], bool) {
	urlKindsMu.RLock()
	defer urlKindsMu.RUnlock()
	k, ok := urlKinds[reflect.TypeFor[S]()].(URLStoreKind[S])
	return k, ok
}

// URLStore is the shared base of the store service types configured by a url parameter. A
// backend's Service embeds it, adds its own overriding parameters (a table, a prefix, a bucket)
// and an Init that checks them and calls [URLStore.OpenURL]. Until then, and after Stop, the
// store methods fail with an error saying the service is not initialized. Between the two,
// the service implements store.Store by delegating to the opened store, so a service of such
// a type named Registry is the application's Registry.
//
// The type S must have been registered with [RegisterURLStoreType].
type URLStore[S ClosableStore] struct {
	// URL is the store's URL, with the parameters its backend documents. Required.
	URL string `json:"url"`

	// cur holds the opened store; nil before Init and after Stop. A pointer to S, as
	// atomic.Pointer stores pointers: Stop may race with a store method of the Registry.
	cur atomic.Pointer[S]
}

// OpenURL parses the url parameter, checks its scheme against the kind registered for S, sets
// the query parameters in overrides (they win over the URL's own), and opens the store,
// closing one opened before. Errors name the service type and the parameter, and never hold
// the URL's secrets. A backend's Init calls it after checking its own parameters.
func (s *URLStore[S]) OpenURL(ctx context.Context, overrides url.Values) error {
	kind, ok := urlKind[S]()
	if !ok {
		return fmt.Errorf("leasehold: no URL store type registered for %v", reflect.TypeFor[S]())
	}
	if s.URL == "" {
		return fmt.Errorf("%s: parameter \"url\" is required (%s)", kind.Type, kind.Example)
	}
	u, err := store.ParseURL(s.URL)
	if err != nil {
		return fmt.Errorf("%s: parameter \"url\": %w", kind.Type, err)
	}
	if !slices.Contains(kind.Schemes, strings.ToLower(u.Scheme)) {
		return fmt.Errorf("%s: parameter \"url\": scheme %q is not %s in %s",
			kind.Type, u.Scheme, strings.Join(kind.Schemes, " or "), store.Redact(u))
	}
	if len(overrides) > 0 {
		q := u.Query()
		for k, v := range overrides {
			q[k] = v
		}
		u.RawQuery = q.Encode()
	}
	st, err := kind.Open(ctx, u)
	if err != nil {
		return fmt.Errorf("%s: parameter \"url\" (%s): %w", kind.Type, store.Redact(u), store.RedactError(err, u))
	}
	if old := s.cur.Swap(&st); old != nil {
		(*old).Close()
	}
	return nil
}

// Stop closes the store. It does nothing before Init or when called again.
func (s *URLStore[S]) Stop(context.Context) error {
	if old := s.cur.Swap(nil); old != nil {
		return (*old).Close()
	}
	return nil
}

// Store returns the opened store; the zero S (nil) before Init and after Stop.
func (s *URLStore[S]) Store() S {
	if p := s.cur.Load(); p != nil {
		return *p
	}
	var zero S
	return zero
}

// opened returns the opened store, or an error for op on key saying the service is not
// initialized.
func (s *URLStore[S]) opened(op, key string) (S, error) {
	if p := s.cur.Load(); p != nil {
		return *p, nil
	}
	name := "store service"
	if kind, ok := urlKind[S](); ok {
		name = kind.Type
	}
	var zero S
	return zero, &store.KeyError{Op: op, Key: key, Err: fmt.Errorf("%s: %w", name, ErrNotInitialized)}
}

// ErrNotInitialized is returned (wrapped with the key and the service type) by the store
// methods of a [URLStore] before Init or after Stop.
var ErrNotInitialized = errors.New("not initialized (Init not called, or stopped)")

// Get implements store.Store.
func (s *URLStore[S]) Get(ctx context.Context, key string) (map[string]any, error) {
	st, err := s.opened("get", key)
	if err != nil {
		return nil, err
	}
	return st.Get(ctx, key)
}

// Create implements store.Store.
func (s *URLStore[S]) Create(ctx context.Context, key string, doc map[string]any) error {
	st, err := s.opened("create", key)
	if err != nil {
		return err
	}
	return st.Create(ctx, key, doc)
}

// Patch implements store.Store.
func (s *URLStore[S]) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	st, err := s.opened("patch", key)
	if err != nil {
		return err
	}
	return st.Patch(ctx, key, fields, cond)
}

// Delete implements store.Store.
func (s *URLStore[S]) Delete(ctx context.Context, key string, cond *store.Condition) error {
	st, err := s.opened("delete", key)
	if err != nil {
		return err
	}
	return st.Delete(ctx, key, cond)
}
