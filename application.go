package leasehold

import (
	"sync"

	"github.com/leasehold/leasehold/store"
)

// Application is a configured set of services, started and stopped together.
type Application struct {
	mu       sync.Mutex
	services map[string]Service
	registry store.Store
}

// Service returns the service of that name once it has been initialized.
func (a *Application) Service(name string) (Service, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.services[name]
	return s, ok
}

// Registry returns the application's Registry store: the service named Registry, or a memory
// store when none is configured. It is nil before Start.
func (a *Application) Registry() store.Store {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.registry
}
