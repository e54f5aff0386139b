package sqlite

import (
	"context"
	"errors"
	"fmt"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/store"
)

func init() {
	leasehold.RegisterServiceType("Webda/SQLiteStore", func() leasehold.Service { return &Service{} })
}

// Service is the service type Webda/SQLiteStore: a [Store] configured by JSON parameters,
// opened by Init and closed by Stop. It implements store.Store, so a service of this type named
// Registry is the application's Registry:
//
//	"Registry": {"type": "Webda/SQLiteStore", "url": "sqlite:///var/lib/app/registry.db", "table": "registry"}
type Service struct {
	// URL is the database file's sqlite:///absolute/path URL, with the parameters described in the package
	// documentation. Required.
	URL string `json:"url"`
	// Table is the table's name; it overrides the URL's table parameter. Default
	// leasehold_registry.
	Table string `json:"table,omitempty"`

	store *Store
}

var (
	_ leasehold.Service = (*Service)(nil)
	_ leasehold.Stopper = (*Service)(nil)
	_ store.Store       = (*Service)(nil)
)

// errNotStarted is returned by the store methods of a Service that Init has not opened.
var errNotStarted = errors.New("sqlite: the SQLiteStore service is not initialized")

// Init checks the parameters and opens the store. It does not use app, which may be nil.
func (s *Service) Init(ctx context.Context, _ *leasehold.Application) error {
	if s.URL == "" {
		return errors.New("sqlite: parameter url is required (sqlite:///absolute/path.db)")
	}
	u, err := store.ParseURL(s.URL)
	if err != nil {
		return fmt.Errorf("sqlite: parameter url: %w", err)
	}
	if s.Table != "" {
		if err := checkTable(s.Table); err != nil {
			return fmt.Errorf("sqlite: %w", err)
		}
		q := u.Query()
		q.Set("table", s.Table)
		c := *u
		c.RawQuery = q.Encode()
		u = &c
	}
	st, err := openURL(ctx, u)
	if err != nil {
		return fmt.Errorf("sqlite: parameter url (%s): %w", store.Redact(u), err)
	}
	s.store = st
	return nil
}

// Stop closes the store.
func (s *Service) Stop(context.Context) error {
	if s.store == nil {
		return nil
	}
	return s.store.Close()
}

// Store returns the opened store, nil before Init.
func (s *Service) Store() *Store { return s.store }

// Get implements store.Store.
func (s *Service) Get(ctx context.Context, key string) (map[string]any, error) {
	if s.store == nil {
		return nil, store.WrapKey("get", key, errNotStarted)
	}
	return s.store.Get(ctx, key)
}

// Create implements store.Store.
func (s *Service) Create(ctx context.Context, key string, doc map[string]any) error {
	if s.store == nil {
		return store.WrapKey("create", key, errNotStarted)
	}
	return s.store.Create(ctx, key, doc)
}

// Patch implements store.Store.
func (s *Service) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	if s.store == nil {
		return store.WrapKey("patch", key, errNotStarted)
	}
	return s.store.Patch(ctx, key, fields, cond)
}

// Delete implements store.Store.
func (s *Service) Delete(ctx context.Context, key string, cond *store.Condition) error {
	if s.store == nil {
		return store.WrapKey("delete", key, errNotStarted)
	}
	return s.store.Delete(ctx, key, cond)
}
