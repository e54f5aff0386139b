//go:build unix && (!leasehold_minimal || leasehold_azblob) && !leasehold_no_azblob

package main

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/leasehold/leasehold/internal/cloudemu"
	azblobstore "github.com/leasehold/leasehold/store/azblob"
)

func init() {
	cloudStores = append(cloudStores, cloudStore{name: "azblob", kind: cloudemu.Azure, setup: func(t *testing.T, e *cloudemu.Emulator) (string, map[string]string, func(*testing.T, string, []byte)) {
		client, err := azblob.NewClientFromConnectionString(e.AzureConnectionString(), nil)
		if err != nil {
			t.Fatal(err)
		}
		const container = "leasehold-cmd"
		if _, err := client.CreateContainer(t.Context(), container, nil); err != nil {
			t.Fatal(err)
		}
		const env = "LEASEHOLD_TEST_AZURE"
		url := "azblob://" + cloudemu.AzureAccount + "/" + container + "/app/?connection_string_env=" + env
		put := func(t *testing.T, key string, raw []byte) {
			st, err := azblobstore.Open(t.Context(), url)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if _, err := client.UploadBuffer(t.Context(), container, st.BlobName(key), raw, nil); err != nil {
				t.Fatal(err)
			}
		}
		return url, map[string]string{env: e.AzureConnectionString()}, put
	}})
}
