package nats

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/store"
)

// ServiceType is the name configurations use for [Service].
const ServiceType = "Webda/NatsStore"

func init() {
	open := func(ctx context.Context, u *url.URL) (store.Store, error) { return openURL(ctx, u) }
	store.RegisterOpener("nats", open)
	leasehold.RegisterServiceType(ServiceType, func() leasehold.Service { return new(Service) })
}

// Service is the Webda/NatsStore service: a NATS JetStream KV store configured with JSON parameters,
// usually as the application's Registry:
//
//	"Registry": {"type": "Webda/NatsStore", "url": "nats://127.0.0.1:4222", "bucket": "myapp"}
//
// Parameters: url (required, nats://host:port[,host:port]) and bucket (optional; when given it
// replaces the URL's bucket parameter). Init opens the store, creating the bucket unless the URL
// says create_bucket=false; Stop closes it; in between, Service implements store.Store by
// delegating to it.
type Service struct {
	URL    string `json:"url"`
	Bucket string `json:"bucket,omitempty"`

	store atomic.Pointer[Store]
}

var (
	_ leasehold.Service = (*Service)(nil)
	_ leasehold.Stopper = (*Service)(nil)
	_ store.Store       = (*Service)(nil)
)

// errNotStarted is returned by the Store methods before Init or after Stop.
var errNotStarted = errors.New(ServiceType + ": not initialized (Init not called, or stopped)")

// Init validates the parameters and opens the store. It does not use app, which may be nil.
func (s *Service) Init(ctx context.Context, _ *leasehold.Application) error {
	if s.URL == "" {
		return fmt.Errorf("%s: parameter \"url\" is required (nats://host:port[,host:port])", ServiceType)
	}
	u, err := store.ParseURL(s.URL)
	if err != nil {
		return fmt.Errorf("%s: parameter \"url\": %w", ServiceType, err)
	}
	if !strings.EqualFold(u.Scheme, "nats") {
		return fmt.Errorf("%s: parameter \"url\": scheme %q is not nats in %s", ServiceType, u.Scheme, redact(u))
	}
	if s.Bucket != "" {
		if !validBucket(s.Bucket) {
			return fmt.Errorf("%s: parameter \"bucket\": %q is not a bucket name (letters, digits, '-' and '_')", ServiceType, s.Bucket)
		}
		q := u.Query()
		q.Set("bucket", s.Bucket)
		u.RawQuery = q.Encode()
	}
	st, err := OpenURL(ctx, u)
	if err != nil {
		return fmt.Errorf("%s: parameter \"url\": %w", ServiceType, err)
	}
	if old := s.store.Swap(st); old != nil {
		old.Close()
	}
	return nil
}

// Stop closes the store.
func (s *Service) Stop(context.Context) error {
	if st := s.store.Swap(nil); st != nil {
		return st.Close()
	}
	return nil
}

// Store returns the opened store, or nil before Init.
func (s *Service) Store() *Store { return s.store.Load() }

// Get implements store.Store.
func (s *Service) Get(ctx context.Context, key string) (map[string]any, error) {
	st := s.store.Load()
	if st == nil {
		return nil, store.WrapKey("get", key, errNotStarted)
	}
	return st.Get(ctx, key)
}

// Create implements store.Store.
func (s *Service) Create(ctx context.Context, key string, doc map[string]any) error {
	st := s.store.Load()
	if st == nil {
		return store.WrapKey("create", key, errNotStarted)
	}
	return st.Create(ctx, key, doc)
}

// Patch implements store.Store.
func (s *Service) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	st := s.store.Load()
	if st == nil {
		return store.WrapKey("patch", key, errNotStarted)
	}
	return st.Patch(ctx, key, fields, cond)
}

// Delete implements store.Store.
func (s *Service) Delete(ctx context.Context, key string, cond *store.Condition) error {
	st := s.store.Load()
	if st == nil {
		return store.WrapKey("delete", key, errNotStarted)
	}
	return st.Delete(ctx, key, cond)
}
