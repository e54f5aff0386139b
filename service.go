package leasehold

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Service is a configured part of an application. The application creates it from its type's
// factory, decodes the service's parameters into it (strictly: an unknown parameter is an
// error), then calls Init in configuration order. A Service may also implement [Stopper].
type Service interface {
	Init(ctx context.Context, app *Application) error
}

// Stopper is implemented by services that hold resources: Stop is called in reverse order of
// Init when the application stops, or when a later service fails to start.
type Stopper interface {
	Stop(ctx context.Context) error
}

const namespace = "Webda/"

var (
	typesMu sync.RWMutex
	types   = map[string]func() Service{}
)

// RegisterServiceType makes a service type available to configurations under name, with or
// without the "Webda/" namespace ("StoreClusterService" and "Webda/StoreClusterService" are the
// same type). factory must return a new pointer each call: the service's parameters are decoded
// into it. It panics when name is empty or already registered.
func RegisterServiceType(name string, factory func() Service) {
	key := typeKey(name)
	if key == "" || factory == nil {
		panic("leasehold: RegisterServiceType with an empty name or a nil factory")
	}
	typesMu.Lock()
	defer typesMu.Unlock()
	if _, dup := types[key]; dup {
		panic(fmt.Sprintf("leasehold: service type %q registered twice", namespace+key))
	}
	types[key] = factory
}

// ServiceTypes returns the registered type names, with their namespace, sorted: those of
// RegisterServiceType and those of the store backends (see [URLStore]).
func ServiceTypes() []string {
	typesMu.RLock()
	out := make([]string, 0, len(types))
	for k := range types {
		out = append(out, namespace+k)
	}
	typesMu.RUnlock()
	out = append(out, storeServiceTypes()...)
	slices.Sort(out)
	return slices.Compact(out)
}

// lookupType returns the factory of the type name: a registered one, or else the store service
// type of the backend that declares name.
func lookupType(name string) (func() Service, bool) {
	typesMu.RLock()
	f, ok := types[typeKey(name)]
	typesMu.RUnlock()
	if ok {
		return f, true
	}
	b, ok := storeBackend(name)
	if !ok {
		return nil, false
	}
	return func() Service { return &URLStore{backend: b} }, true
}

// typeKey drops the Webda/ namespace: type names are looked up without it.
func typeKey(name string) string {
	return strings.TrimPrefix(strings.TrimSpace(name), namespace)
}
