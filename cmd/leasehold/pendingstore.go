package main

import (
	"context"
	"log/slog"
	"net/url"
	"time"

	"github.com/leasehold/leasehold/internal/storewait"
	"github.com/leasehold/leasehold/store"
)

// A store that cannot be reached or is not ready when run starts is a follower's condition,
// not a fatal error (C7 of docs/design.md): the command keeps trying to open it (see package
// storewait), and its election runs over a store whose calls fail until it opens, so that the
// instance follows (never leads) until the store answers. Only an error waiting cannot cure
// (store.ErrConfig: a bad URL or parameter, a file the URL names that cannot be read, refused
// credentials, a TLS setting that cannot work), or any error of a local store, stops the start.

// openStoreWaiting opens the store of rawURL, each attempt bounded by bound: an error waiting
// cannot cure (store.NotReady false) is returned at once; another one makes a storewait.Store
// that keeps trying in the background, with the back-off of R r, logging to log.
func openStoreWaiting(ctx context.Context, rawURL string, bound, r time.Duration, log *slog.Logger) (store.Store, error) {
	open := func(ctx context.Context) (store.Store, error) {
		ctx, cancel := context.WithTimeout(ctx, bound)
		defer cancel()
		return openStore(ctx, rawURL)
	}
	st, err := open(ctx)
	if err == nil {
		return st, nil
	}
	u, perr := url.Parse(rawURL)
	if !store.NotReady(err) || perr != nil || storewait.Local(u.Scheme) {
		return nil, err
	}
	return storewait.New(ctx, open, err, r, log), nil
}
