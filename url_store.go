package leasehold

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/internal/storewait"
	"github.com/leasehold/leasehold/store"
)

// URLStore is the service type of every store backend registered with a service type
// (store.Backend's ServiceType: Webda/PostgresStore, Webda/RedisStore, ...), so that a backend
// needs no code of its own here. Its parameters are the store's URL, given by exactly one of
// url, urlFile and urlEnv, and those the backend declares (store.Backend's Params: a table, a
// prefix, a bucket), each of which, when given, sets the URL's query parameter of that name;
// any other parameter is an error naming it (A2).
//
//	"Registry": {"type": "Webda/PostgresStore", "url": "postgres://app@db:5432/app", "table": "registry"}
//
// A URL holding a secret stays out of the configuration: urlFile names a file whose content,
// without its leading and trailing white space, is the URL (a mounted Kubernetes Secret), and
// urlEnv names an environment variable holding it. Both are read by each Init. A missing or
// unreadable file, an empty one, or a variable unset or empty is an error naming the service
// type, the parameter and the file or variable; no error quotes the URL's secrets.
//
//	"Registry": {"type": "Webda/PostgresStore", "urlFile": "/run/secrets/leasehold/url", "table": "registry"}
//	"Registry": {"type": "Webda/RedisStore", "urlEnv": "REGISTRY_URL"}
//
// Init opens the store and Stop closes it. Until then, and after Stop, the store methods fail
// with an error saying the service is not initialized. A store whose server cannot be reached
// or is not ready at Init (an error without store.ErrConfig) does not fail Init: it keeps being
// opened in the background, with a back-off, and until it opens the store methods fail with
// ErrNotInitialized and the last failure, so an election over it follows (C7). Between the two, the service implements
// store.Store by delegating to the opened store, so a service of such a type named Registry is
// the application's Registry.
type URLStore struct {
	// URL is the store's URL, with the parameters its backend documents. Exactly one of URL,
	// URLFile and URLEnv is required.
	URL string `json:"url"`
	// URLFile is the path of a file holding the store's URL (white space around it ignored).
	URLFile string `json:"urlFile"`
	// URLEnv is the name of an environment variable holding the store's URL.
	URLEnv string `json:"urlEnv"`

	backend store.Backend
	params  url.Values // the backend's parameters the configuration gives

	// cur holds the opened store; nil before Init and after Stop. Stop may race with a store
	// method of the Registry.
	cur atomic.Pointer[store.Store]
}

var (
	_ Service       = (*URLStore)(nil)
	_ Stopper       = (*URLStore)(nil)
	_ store.Store   = (*URLStore)(nil)
	_ store.Watcher = (*URLStore)(nil)
)

// NewURLStore returns a new service of the store service type typ ("Webda/PostgresStore", with
// or without its namespace), as a configuration naming that type makes it. The backend's
// package must have been imported, for its registration.
func NewURLStore(typ string) (*URLStore, error) {
	b, ok := storeBackend(typ)
	if !ok {
		return nil, fmt.Errorf("leasehold: no store backend registers the service type %q (known types: %v)", typ, ServiceTypes())
	}
	return &URLStore{backend: b}, nil
}

// storeBackend returns the backend registered with the service type name.
func storeBackend(name string) (store.Backend, bool) {
	for _, b := range store.Backends() {
		if b.ServiceType != "" && typeKey(b.ServiceType) == typeKey(name) {
			return b, true
		}
	}
	return store.Backend{}, false
}

// storeServiceTypes returns the service types of the store backends, with their namespace.
func storeServiceTypes() []string {
	var out []string
	for _, b := range store.Backends() {
		if b.ServiceType != "" {
			out = append(out, namespace+typeKey(b.ServiceType))
		}
	}
	return out
}

// declaredParams implements paramDeclarer: the application's decoding accepts the backend's
// parameters beside url, urlFile and urlEnv.
func (s *URLStore) declaredParams() []string { return s.backend.Params }

// UnmarshalJSON decodes the service's parameters strictly: url, urlFile, urlEnv and the
// backend's parameters, each a string (null leaves a parameter unset); any other is an error
// naming it.
func (s *URLStore) UnmarshalJSON(data []byte) error {
	fields, err := objectFields(data)
	if err != nil {
		return err
	}
	known := map[string]bool{"url": true, "urlFile": true, "urlEnv": true}
	for _, p := range s.backend.Params {
		known[p] = true
	}
	for _, f := range fields {
		if !known[f.name] {
			return unknownParam(f.name, known)
		}
		var v *string
		if err := json.Unmarshal(f.value, &v); err != nil {
			return fmt.Errorf("parameter %q: %w", f.name, err)
		}
		switch {
		case v == nil:
		case f.name == "url":
			s.URL = *v
		case f.name == "urlFile":
			s.URLFile = *v
		case f.name == "urlEnv":
			s.URLEnv = *v
		default:
			if s.params == nil {
				s.params = url.Values{}
			}
			s.params.Set(f.name, *v)
		}
	}
	return nil
}

// Init opens the store from the URL that url, urlFile or urlEnv gives, its query parameters
// replaced by the backend's parameters given, closing a store opened before. Errors name the
// service type and the parameter, and never hold the URL's secrets. It does not use app, which
// may be nil.
func (s *URLStore) Init(ctx context.Context, app *Application) error {
	b := s.backend
	if b.Open == nil {
		return errors.New("leasehold: a URLStore is made by NewURLStore or by a configuration")
	}
	raw, param, err := s.rawURL()
	if err != nil {
		return fmt.Errorf("%s: %w", b.ServiceType, err)
	}
	u, err := store.ParseURL(raw)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", b.ServiceType, param, err)
	}
	if !slices.Contains(b.Schemes, strings.ToLower(u.Scheme)) {
		return fmt.Errorf("%s: %s: scheme %q is not %s in %s",
			b.ServiceType, param, u.Scheme, strings.Join(b.Schemes, " or "), store.Redact(u))
	}
	if len(s.params) > 0 {
		q := u.Query()
		for k, v := range s.params {
			q[k] = v
		}
		u.RawQuery = q.Encode()
	}
	wrap := func(err error) error {
		if err == nil {
			return nil
		}
		return fmt.Errorf("%s: %s (%s): %w", b.ServiceType, param, store.Redact(u), store.RedactError(err, u))
	}
	st, err := b.Open(ctx, u)
	if err != nil {
		err = wrap(err)
		if !store.NotReady(err) || storewait.Local(u.Scheme) || ctx.Err() != nil {
			return err // bad configuration, a local store, or Init cancelled (A3)
		}
		// A server that cannot be reached or is not ready yet (C7): the store keeps being
		// opened in the background, and until then its methods fail (ErrNotInitialized), so
		// an election over it follows.
		log := slog.Default()
		if app != nil {
			log = app.Logger()
		}
		open := func(ctx context.Context) (store.Store, error) {
			ctx, cancel := context.WithTimeout(ctx, openAttemptBound)
			defer cancel()
			st, err := b.Open(ctx, u)
			return st, wrap(err)
		}
		st = storewait.New(ctx, open, err, time.Second, log)
	}
	if old := s.cur.Swap(&st); old != nil {
		store.Close(*old)
	}
	return nil
}

// openAttemptBound bounds each attempt to open a store that was not ready at Init.
const openAttemptBound = 10 * time.Second

// rawURL returns the URL that url, urlFile or urlEnv gives, and the parameter that gave it as
// errors name it: `parameter "url"`, `parameter "urlFile" (file PATH)` or
// `parameter "urlEnv" (variable NAME)`. Its errors name the parameters, the file and the
// variable, and never quote what the file or variable holds.
func (s *URLStore) rawURL() (raw, param string, err error) {
	var given []string
	for name, v := range map[string]string{"url": s.URL, "urlFile": s.URLFile, "urlEnv": s.URLEnv} {
		if v != "" {
			given = append(given, strconv.Quote(name))
		}
	}
	slices.Sort(given) // url, urlEnv, urlFile
	switch {
	case len(given) == 0:
		return "", "", fmt.Errorf(`parameter "url" is required, or "urlFile" or "urlEnv" instead (%s)`, s.backend.Example)
	case len(given) > 1:
		list := strings.Join(given[:len(given)-1], ", ") + " and " + given[len(given)-1]
		return "", "", fmt.Errorf(`parameters %s are given: exactly one of "url", "urlFile" and "urlEnv" is allowed`, list)
	case s.URL != "":
		return s.URL, `parameter "url"`, nil
	case s.URLFile != "":
		param = fmt.Sprintf(`parameter "urlFile" (file %s)`, s.URLFile)
		data, err := os.ReadFile(s.URLFile)
		if err != nil {
			// The *PathError names the file and the cause, not the content.
			return "", "", fmt.Errorf(`parameter "urlFile": %w`, err)
		}
		raw = strings.TrimSpace(string(data))
		if raw == "" {
			return "", "", fmt.Errorf(`%s: the file is empty, want the store's URL`, param)
		}
		return raw, param, nil
	default:
		param = fmt.Sprintf(`parameter "urlEnv" (variable %s)`, s.URLEnv)
		v, ok := os.LookupEnv(s.URLEnv)
		raw = strings.TrimSpace(v)
		switch {
		case !ok:
			return "", "", fmt.Errorf(`%s: the variable is not set, want the store's URL`, param)
		case raw == "":
			return "", "", fmt.Errorf(`%s: the variable is empty, want the store's URL`, param)
		}
		return raw, param, nil
	}
}

// Stop closes the store. It does nothing before Init or when called again.
func (s *URLStore) Stop(context.Context) error {
	if old := s.cur.Swap(nil); old != nil {
		return store.Close(*old)
	}
	return nil
}

// Store returns the opened store (the backend's own type, such as *postgres.Store); nil before
// Init and after Stop.
func (s *URLStore) Store() store.Store {
	if p := s.cur.Load(); p != nil {
		if w, ok := (*p).(*storewait.Store); ok {
			return w.Opened()
		}
		return *p
	}
	return nil
}

// NotOpen returns, while the store Init could not open yet is being opened in the background
// (C7), the last attempt's error; nil once it is open, and before Init or after Stop. A
// one-shot tool that cannot wait (leasehold status) fails with it.
func (s *URLStore) NotOpen() error {
	if p := s.cur.Load(); p != nil {
		if w, ok := (*p).(*storewait.Store); ok && w.Opened() == nil {
			return w.LastErr()
		}
	}
	return nil
}

// opened returns the opened store, or an error for op on key saying the service is not
// initialized.
func (s *URLStore) opened(op, key string) (store.Store, error) {
	if st := s.Store(); st != nil {
		return st, nil
	}
	name := s.backend.ServiceType
	if name == "" {
		name = "store service"
	}
	if p := s.cur.Load(); p != nil {
		if w, ok := (*p).(*storewait.Store); ok {
			return nil, &store.KeyError{Op: op, Key: key, Err: fmt.Errorf("%s: %w: %w: %w", name, ErrNotInitialized, storewait.ErrNotOpen, w.LastErr())}
		}
	}
	return nil, &store.KeyError{Op: op, Key: key, Err: fmt.Errorf("%s: %w", name, ErrNotInitialized)}
}

// ErrNotInitialized is returned (wrapped with the key and the service type) by the store
// methods of a [URLStore] before Init or after Stop.
var ErrNotInitialized = errors.New("not initialized (Init not called, or stopped)")

// Get implements store.Store.
func (s *URLStore) Get(ctx context.Context, key string) (map[string]any, error) {
	st, err := s.opened("get", key)
	if err != nil {
		return nil, err
	}
	return st.Get(ctx, key)
}

// Create implements store.Store.
func (s *URLStore) Create(ctx context.Context, key string, doc map[string]any) error {
	st, err := s.opened("create", key)
	if err != nil {
		return err
	}
	return st.Create(ctx, key, doc)
}

// Patch implements store.Store.
func (s *URLStore) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	st, err := s.opened("patch", key)
	if err != nil {
		return err
	}
	return st.Patch(ctx, key, fields, cond)
}

// Watch implements store.Watcher by forwarding to the opened store: a StoreClusterService over
// this Registry watches its lease (E9) when the backend can. A store that cannot answers
// store.ErrWatchUnsupported.
func (s *URLStore) Watch(ctx context.Context, key string, fn func(store.Change)) error {
	st, err := s.opened("watch", key)
	if err != nil {
		return err
	}
	return store.Watch(ctx, st, key, fn)
}

// Delete implements store.Store.
func (s *URLStore) Delete(ctx context.Context, key string, cond *store.Condition) error {
	st, err := s.opened("delete", key)
	if err != nil {
		return err
	}
	return st.Delete(ctx, key, cond)
}
