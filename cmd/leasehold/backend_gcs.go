//go:build (!leasehold_minimal || leasehold_gcs) && !leasehold_no_gcs

package main

import (
	"context"

	"github.com/leasehold/leasehold/store"
	gcsstore "github.com/leasehold/leasehold/store/gcs" // gs://, Webda/GCSStore
)

// The Cloud Storage store never deletes an object that is not a JSON object: repair removes
// one with the store's own client, unconditionally (see unreadable).
func init() {
	rawDeleters = append(rawDeleters, func(ctx context.Context, st store.Store, key string) (bool, error) {
		gs, ok := st.(*gcsstore.Store)
		if !ok {
			return false, nil
		}
		return true, gs.Bucket().Object(gs.ObjectName(key)).Delete(ctx)
	})
}
