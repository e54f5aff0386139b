//go:build unix && (!leasehold_minimal || leasehold_gcs) && !leasehold_no_gcs

package main

import (
	"testing"

	"github.com/leasehold/leasehold/internal/cloudemu"
	gcsstore "github.com/leasehold/leasehold/store/gcs"
)

func init() {
	cloudStores = append(cloudStores, cloudStore{name: "gcs", kind: cloudemu.GCS,
		// Cloud Storage takes about one write per second per object: the store refuses a shorter R.
		lease: "4s", renew: "1s",
		setup: func(t *testing.T, e *cloudemu.Emulator) (string, map[string]string, func(*testing.T, string, []byte)) {
			const bucket = "leasehold-cmd"
			if err := e.CreateGCSBucket(t.Context(), bucket); err != nil {
				t.Fatal(err)
			}
			url := "gs://" + bucket + "/app/?endpoint=" + e.Endpoint
			put := func(t *testing.T, key string, raw []byte) {
				st, err := gcsstore.Open(t.Context(), url)
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				w := st.Bucket().Object(st.ObjectName(key)).NewWriter(t.Context())
				if _, err := w.Write(raw); err != nil {
					t.Fatal(err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
			}
			return url, nil, put
		}})
}
