package gcs

import (
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// TestConformance runs the store suite (T1–T5) against fake-gcs-server.
func TestConformance(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	storetest.Run(t, func(*testing.T) store.Store { return s })
}

// TestRetryWhileConditionHolds: conditional patches whose condition holds succeed however
// often other writers move the object's generation, none lost (T2); see
// storetest.RetryWhileConditionHolds.
func TestRetryWhileConditionHolds(t *testing.T) {
	t.Parallel()
	storetest.RetryWhileConditionHolds(t, openTest(t).Store)
}
