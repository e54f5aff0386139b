package main

import (
	"slices"
	"testing"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/store"
)

// The table of optional backends matches what the backends register, whatever the build
// tags: a backend linked in has all its schemes and service types registered, and every
// scheme but the core module's (file, mem) is an optional backend's.
func TestOptionalBackendsTable(t *testing.T) {
	for _, b := range optionalBackends {
		if !b.linked() {
			continue
		}
		for _, s := range b.schemes {
			if !slices.Contains(store.Schemes(), s) {
				t.Errorf("backend %s: scheme %s is not registered", b.name, s)
			}
		}
		for _, typ := range b.serviceTypes {
			if !slices.Contains(leasehold.ServiceTypes(), typ) {
				t.Errorf("backend %s: service type %s is not registered", b.name, typ)
			}
		}
	}
	for _, s := range store.Schemes() {
		if s == "file" || s == "mem" {
			continue
		}
		if !slices.ContainsFunc(optionalBackends, func(b optionalBackend) bool { return slices.Contains(b.schemes, s) }) {
			t.Errorf("scheme %s is no optional backend's: add its backend to optionalBackends", s)
		}
	}
}
