package fence

import (
	"errors"
	"fmt"
)

// ErrStale is wrapped by the error of a write refused because a later holding wrote: the
// fence holds a higher term than the write's.
var ErrStale = errors.New("fence: stale term")

// StaleError is a write refused by a fence: the resource's fence holds Stored, higher than the
// write's Term. It wraps ErrStale.
type StaleError struct {
	Resource string
	Term     uint64 // the term the refused write carried
	Stored   uint64 // the higher term the fence holds
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("fence: resource %q: term %d is stale: a later holding wrote under term %d", e.Resource, e.Term, e.Stored)
}

// Unwrap returns ErrStale.
func (e *StaleError) Unwrap() error { return ErrStale }
