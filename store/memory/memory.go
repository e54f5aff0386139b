// Package memory is an in-process [store.Store]. It is safe for concurrent use, does no I/O and
// starts no goroutine, so it runs inside testing/synctest bubbles.
//
// A memory store is local to one process: electors in different processes that each use one
// never see each other.
//
// URL: "mem://" opens a new empty store; "mem://NAME" opens the process-wide store of that name,
// shared by every Open of the same name ("mem://NAME", "mem:///NAME" and "mem:NAME" are the same
// name; NAME may contain slashes).
package memory

import (
	"context"
	"net/url"
	"strings"
	"sync"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

func init() {
	store.Register(store.Backend{Schemes: []string{"mem"}, Open: func(_ context.Context, u *url.URL) (store.Store, error) {
		name := storeName(u)
		if name == "" {
			return New(), nil
		}
		namedMu.Lock()
		defer namedMu.Unlock()
		s, ok := named[name]
		if !ok {
			s = New()
			named[name] = s
		}
		return s, nil
	}})
}

// storeName is the name a mem URL gives its store: "mem://a/b", "mem:///a/b/" and "mem:a/b" all
// name "a/b" (the slash is kept, so "mem://a/b" and "mem://ab" are different stores).
func storeName(u *url.URL) string {
	if u.Opaque != "" {
		return strings.Trim(u.Opaque, "/")
	}
	return strings.Trim(u.Host+u.Path, "/")
}

var (
	namedMu sync.Mutex
	named   = map[string]*Store{}
)

// Store is an in-memory store.Store.
type Store struct{ *driver.Portable }

// New returns an empty store.
func New() *Store { return &Store{driver.New(&backend{docs: map[string]map[string]any{}})} }

// backend is the driver.Driver behind Store.
type backend struct {
	mu       sync.Mutex
	docs     map[string]map[string]any
	watchers map[string]map[chan struct{}]struct{} // by key: the wake channels of its watches
}

func (s *backend) Get(_ context.Context, key string) (map[string]any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	doc, ok := s.docs[key]
	if !ok {
		return nil, store.ErrNotFound
	}
	return driver.CopyDoc(doc), nil
}

func (s *backend) Create(_ context.Context, key string, doc map[string]any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.docs[key]; ok {
		return store.ErrExists
	}
	s.docs[key] = doc
	s.notify(key)
	return nil
}

func (s *backend) Patch(_ context.Context, key string, fields map[string]any, cond *driver.Condition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	doc, err := driver.Find(s.docs, key, cond)
	if err != nil {
		return err
	}
	// Get hands out copies, so the stored map can be updated in place.
	for k, v := range fields {
		doc[k] = v
	}
	s.notify(key)
	return nil
}

func (s *backend) Delete(_ context.Context, key string, cond *driver.Condition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := driver.Find(s.docs, key, cond); err != nil {
		return err
	}
	delete(s.docs, key)
	s.notify(key)
	return nil
}
