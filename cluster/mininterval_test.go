package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/memory"
)

// slowStore is a store that accepts a write to one key once a second at most.
type slowStore struct{ store.Store }

func (slowStore) MinWriteInterval() (time.Duration, string) {
	return time.Second, "store/slow: one write per second per key"
}

// wrapped is a store that opens another, as the URL store service does.
type wrapped struct{ inner store.Store }

func (w wrapped) Store() store.Store { return w.inner }

func (w wrapped) Get(ctx context.Context, key string) (map[string]any, error) {
	return w.inner.Get(ctx, key)
}

func (w wrapped) Create(ctx context.Context, key string, doc map[string]any) error {
	return w.inner.Create(ctx, key, doc)
}

func (w wrapped) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	return w.inner.Patch(ctx, key, fields, cond)
}

func (w wrapped) Delete(ctx context.Context, key string, cond *store.Condition) error {
	return w.inner.Delete(ctx, key, cond)
}

// TestMinWriteInterval: an election whose renew interval is shorter than its store's least
// interval between writes is refused at construction, with an error naming the store and the
// reason; an R at the bound is accepted, through a wrapper too.
func TestMinWriteInterval(t *testing.T) {
	t.Parallel()
	slow := slowStore{memory.New()}
	for _, s := range []store.Store{slow, wrapped{slow}} {
		_, err := NewElector(ElectorConfig{Lock: NewStoreLock(s), LeaseDuration: 5 * time.Second, RenewInterval: 500 * time.Millisecond, Logger: quietLogger()})
		if err == nil || !strings.Contains(err.Error(), "store/slow: one write per second per key") || !strings.Contains(err.Error(), "RenewInterval 500ms") {
			t.Errorf("R=500ms over a store of one write per second: %v, want an error naming the store and the reason", err)
		}
		if _, err := NewElector(ElectorConfig{Lock: NewStoreLock(s), LeaseDuration: 5 * time.Second, RenewInterval: time.Second, Logger: quietLogger()}); err != nil {
			t.Errorf("R=1s over a store of one write per second: %v", err)
		}
	}
	if _, err := NewElector(ElectorConfig{Lock: NewStoreLock(memory.New()), LeaseDuration: time.Second, RenewInterval: 100 * time.Millisecond, Logger: quietLogger()}); err != nil {
		t.Errorf("R=100ms over a store without a bound: %v", err)
	}
}
