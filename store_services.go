package leasehold

import (
	"context"
	"errors"
	"fmt"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/file"
	"github.com/leasehold/leasehold/store/memory"
)

func init() {
	RegisterServiceType("Webda/MemoryStore", func() Service { return &MemoryStore{} })
}

// MemoryStore is the service type Webda/MemoryStore: an in-process store, and the Registry
// when none is configured. As the Registry of a StoreClusterService it makes every process
// elect itself: configured explicitly, it is allowed with a warning, for a single process or
// tests; as the default Registry, it is a start error.
type MemoryStore struct {
	*memory.Store `json:"-"`
}

var (
	_ Service     = (*MemoryStore)(nil)
	_ store.Store = (*MemoryStore)(nil)
)

// Init implements Service.
func (m *MemoryStore) Init(context.Context, *Application) error {
	m.Store = memory.New()
	return nil
}

// ProcessLocal reports that the store is not shared between processes. An Application asks it
// of its Registry to warn that a StoreClusterService over it elects every process; a Registry
// service type of another module that is process-local too implements it for the same warning.
func (m *MemoryStore) ProcessLocal() bool { return true }

func init() {
	RegisterServiceType("Webda/FileStore", func() Service { return &FileStore{} })
}

// FileStore is the service type Webda/FileStore: a store in one JSON file, shared safely by
// the processes of one host (see package store/file).
//
//	{"services": {"Registry": {"type": "Webda/FileStore", "path": "/var/lib/app/registry.json"}}}
type FileStore struct {
	Path        string `json:"path"`
	*file.Store `json:"-"`
}

var (
	_ Service     = (*FileStore)(nil)
	_ Stopper     = (*FileStore)(nil)
	_ store.Store = (*FileStore)(nil)
)

// Init opens the file.
func (f *FileStore) Init(context.Context, *Application) error {
	if f.Path == "" {
		return errors.New(`parameter "path" is required`)
	}
	s, err := file.Open(f.Path)
	if err != nil {
		return fmt.Errorf("parameter \"path\": %w", err)
	}
	f.Store = s
	return nil
}

// Stop closes the file.
func (f *FileStore) Stop(context.Context) error {
	if f.Store == nil {
		return nil
	}
	return f.Store.Close()
}
