//go:build (!leasehold_minimal || leasehold_nats) && !leasehold_no_nats

package main

import (
	"context"

	"github.com/leasehold/leasehold/store"
	natsstore "github.com/leasehold/leasehold/store/nats" // nats://, Webda/NatsStore
)

// The NATS store never deletes a value that is not a JSON object: repair removes one with the
// store's own bucket, unconditionally (see unreadable).
func init() {
	rawDeleters = append(rawDeleters, func(ctx context.Context, st store.Store, key string) (bool, error) {
		ns, ok := st.(*natsstore.Store)
		if !ok {
			return false, nil
		}
		return true, ns.Bucket().Delete(ctx, natsstore.EncodeKey(key))
	})
}
