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
)

func init() {
	store.RegisterOpener("mem", func(_ context.Context, u *url.URL) (store.Store, error) {
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
	})
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
type Store struct {
	mu   sync.Mutex
	docs map[string]map[string]any
}

var _ store.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store { return &Store{docs: map[string]map[string]any{}} }

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (map[string]any, error) {
	if err := check(ctx, key); err != nil {
		return nil, store.WrapKey("get", key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	doc, ok := s.docs[key]
	if !ok {
		return nil, store.WrapKey("get", key, store.ErrNotFound)
	}
	return store.CopyDoc(doc), nil
}

// Create implements store.Store.
func (s *Store) Create(ctx context.Context, key string, doc map[string]any) error {
	if err := check(ctx, key); err != nil {
		return store.WrapKey("create", key, err)
	}
	n, err := store.NormalizeDoc(doc)
	if err != nil {
		return store.WrapKey("create", key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.docs[key]; ok {
		return store.WrapKey("create", key, store.ErrExists)
	}
	s.docs[key] = n
	return nil
}

// Patch implements store.Store.
func (s *Store) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	if err := check(ctx, key); err != nil {
		return store.WrapKey("patch", key, err)
	}
	n, err := store.NormalizeDoc(fields)
	if err != nil {
		return store.WrapKey("patch", key, err)
	}
	want, err := store.CheckCondition(cond)
	if err != nil {
		return store.WrapKey("patch", key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	doc, ok := s.docs[key]
	if !ok {
		return store.WrapKey("patch", key, store.ErrNotFound)
	}
	if !store.Matches(doc, cond, want) {
		return store.WrapKey("patch", key, store.ErrConditionFailed)
	}
	// Get hands out copies, so the stored map can be updated in place.
	for k, v := range n {
		doc[k] = v
	}
	return nil
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, key string, cond *store.Condition) error {
	if err := check(ctx, key); err != nil {
		return store.WrapKey("delete", key, err)
	}
	want, err := store.CheckCondition(cond)
	if err != nil {
		return store.WrapKey("delete", key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	doc, ok := s.docs[key]
	if !ok {
		return store.WrapKey("delete", key, store.ErrNotFound)
	}
	if !store.Matches(doc, cond, want) {
		return store.WrapKey("delete", key, store.ErrConditionFailed)
	}
	delete(s.docs, key)
	return nil
}

func check(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return store.CheckKey(key)
}
