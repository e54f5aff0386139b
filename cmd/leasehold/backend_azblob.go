//go:build (!leasehold_minimal || leasehold_azblob) && !leasehold_no_azblob

package main

import (
	"context"

	"github.com/leasehold/leasehold/store"
	azblobstore "github.com/leasehold/leasehold/store/azblob" // azblob://, Webda/AzureBlobStore
)

// The Azure Blob store never deletes a blob that is not a JSON object: repair removes one with
// the store's own client, unconditionally (see unreadable).
func init() {
	rawDeleters = append(rawDeleters, func(ctx context.Context, st store.Store, key string) (bool, error) {
		as, ok := st.(*azblobstore.Store)
		if !ok {
			return false, nil
		}
		_, err := as.Client().NewBlobClient(as.BlobName(key)).Delete(ctx, nil)
		return true, err
	})
}
