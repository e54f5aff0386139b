package leasehold

import (
	"context"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/memory"
)

func init() {
	RegisterServiceType("Webda/MemoryStore", func() Service { return &MemoryStore{} })
}

// MemoryStore is the service type Webda/MemoryStore: an in-process store. As the Registry of
// a StoreClusterService it makes every process elect itself (a warning is logged): use it for
// a single process, or for tests.
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

// ProcessLocal reports that the store is not shared between processes.
func (m *MemoryStore) ProcessLocal() bool { return true }
