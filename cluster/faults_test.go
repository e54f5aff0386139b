package cluster

import "github.com/leasehold/leasehold/internal/faultstore"

// faultStore is one instance's connection to the store, with faults (faultstore.Store).
type faultStore = faultstore.Store

var (
	newFaultStore = faultstore.New
	errInjected   = faultstore.ErrInjected
)
