package gcs

import (
	"testing"

	"github.com/leasehold/leasehold/servicetest"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// TestServiceType: Webda/GCSStore is registered, decodes its parameters strictly (A2), opens
// the store in Init without an application, works as a store.Store in the bucket and under
// the prefix its URL names, at the endpoint its parameter names, closes it in Stop, refuses
// bad parameters naming them and never a secret, and works as an application's Registry (A4);
// see package servicetest.
func TestServiceType(t *testing.T) {
	t.Parallel()
	servicetest.Run(t, servicetest.Case[*Store]{
		Type: ServiceType,
		Setup: func(t *testing.T) (map[string]any, func(*testing.T, *Store, string)) {
			e := emulator(t)
			bucket := newBucket(t, e.Endpoint)
			endpoint := startShim(t, e.Endpoint)
			admin := adminClient(t, e.Endpoint)
			return map[string]any{"url": "gs://" + bucket + "/svc", "endpoint": endpoint, "anonymous": "true"},
				func(t *testing.T, st *Store, key string) {
					if _, err := admin.Bucket(bucket).Object("svc/" + EncodeKey(key)).Attrs(t.Context()); err != nil || st.BucketName() != bucket {
						t.Errorf("document not in bucket %q under the prefix svc/: %v", bucket, err)
					}
				}
		},
		Unknown: "prefix",
		Secret:  "secretpw1",
		Bad: map[string]string{
			`{}`:                                                `"url" is required`,
			`{"url": "postgres://x@y/z"}`:                       `"url"`,
			`{"url": "not a url at all"}`:                       `"url"`,
			`{"url": "gs://my-bucket?nonsense=1"}`:              `nonsense`,
			`{"url": "gs://u:secretpw1@my-bucket"}`:             `"url"`,
			`{"url": "gs://my-bucket", "endpoint": "ftp://x"}`:  `endpoint`,
			`{"url": "gs://my-bucket", "anonymous": "perhaps"}`: `anonymous`,
		},
	})
}

// TestCutConnection: when the network to the server goes silent, an operation fails by its
// context's deadline (E3), and the store recovers once the network heals; see
// storetest.CutConnection. The client has no timeout of its own: the context bounds every
// request.
func TestCutConnection(t *testing.T) {
	t.Parallel()
	e := emulator(t)
	bucket := newBucket(t, e.Endpoint)
	endpoint := startShim(t, e.Endpoint)
	storetest.CutConnection(t, endpoint[len("http://"):], func(t *testing.T, addr string) store.Store {
		return mustOpen(t, storeURL("http://"+addr, bucket, "cut"))
	})
}
