package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/leasehold/leasehold/store"
)

// OpenWith is a backend's exported Open(ctx, rawURL): it parses rawURL with store.ParseURL
// (whose errors never quote it) and opens it with [OpenURLWith]. name ("store/redis") starts
// every error.
func OpenWith[S any](ctx context.Context, name, rawURL string, open func(context.Context, *url.URL) (S, error)) (S, error) {
	u, err := store.ParseURL(rawURL)
	if err != nil {
		var zero S
		return zero, store.ConfigError(fmt.Errorf("%s: %w", name, err))
	}
	return OpenURLWith(ctx, name, u, open)
}

// OpenURLWith is a backend's exported Open for a parsed URL: open's error, which need not name
// the URL, is returned naming the backend and the redacted URL, with the URL's secrets hidden
// from it (see store.RedactError).
func OpenURLWith[S any](ctx context.Context, name string, u *url.URL, open func(context.Context, *url.URL) (S, error)) (S, error) {
	s, err := open(ctx, u)
	if err != nil {
		var zero S
		return zero, fmt.Errorf("%s: open %s: %w", name, store.Redact(u), store.RedactError(err, u))
	}
	return s, nil
}

// Opener is a backend's typed opener as a store.OpenFunc, for store.Backend's Open: a failed
// open returns a nil store.Store, never one holding a nil S.
func Opener[S store.Store](open func(context.Context, *url.URL) (S, error)) store.OpenFunc {
	return func(ctx context.Context, u *url.URL) (store.Store, error) {
		s, err := open(ctx, u)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

// TakeParam returns the URL query parameter name from q, or def when q has none, and removes it
// from q: the backend's own parameters are not handed to the client library, which might
// refuse them.
func TakeParam(q url.Values, name, def string) string {
	if !q.Has(name) {
		return def
	}
	v := q.Get(name)
	q.Del(name)
	return v
}

// ErrNotObject is in the errors of every backend that reads, under a key, a value that is not
// a JSON object (another program wrote it, or it was damaged): errors.Is finds it beside the
// backend's own sentinel, if any. Such a value can be neither read nor patched; an
// unconditional Delete removes it.
var ErrNotObject = errors.New("store/driver: stored value is not a JSON object")

// NotObject returns err, with its text, and ErrNotObject in its chain too: for a backend that
// finds a value is not a JSON object elsewhere than in DecodeObject (a server-side script).
func NotObject(err error) error { return notObject{err} }

// notObject is err, whose text it keeps, with ErrNotObject in its chain too.
type notObject struct{ err error }

func (e notObject) Error() string        { return e.err.Error() }
func (e notObject) Unwrap() error        { return e.err }
func (e notObject) Is(target error) bool { return target == ErrNotObject }

// DecodeObject reads a stored document as encoding/json would, refusing anything but a JSON
// object (null included) with notJSON, the backend's sentinel for a value something else wrote,
// joined with what is wrong, and ErrNotObject.
func DecodeObject(raw []byte, notJSON error) (map[string]any, error) {
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil || doc == nil {
		if err == nil {
			err = errors.New("null")
		}
		return nil, notObject{fmt.Errorf("%w: %v", notJSON, err)}
	}
	return doc, nil
}
