package azblob

import (
	"net/url"
	"testing"

	"github.com/leasehold/leasehold/servicetest"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// TestServiceType: Webda/AzureBlobStore is registered, decodes its parameters strictly (A2),
// opens the store in Init without an application, works as a store.Store in the container
// and under the prefix its URL names, closes it in Stop, refuses bad parameters naming them
// and never the connection string's key, and works as an application's Registry (A4); see
// package servicetest.
func TestServiceType(t *testing.T) {
	t.Parallel()
	e := emulator(t)
	servicetest.Run(t, servicetest.Case[*Store]{
		Type: ServiceType,
		Setup: func(t *testing.T) (map[string]any, func(*testing.T, *Store, string)) {
			name := newContainer(t, e)
			// The endpoint comes from its parameter, the connection string from the variable
			// connection_string_env names.
			return map[string]any{
					"url":                   emulatorURL(name, "svc/", nil),
					"endpoint":              e.Endpoint + "/" + "devstoreaccount1",
					"connection_string_env": connEnv,
				}, func(t *testing.T, st *Store, key string) {
					blobName := "svc/" + EncodeKey(key) + ".json"
					if _, err := adminClient(t, e, name).NewBlobClient(blobName).GetProperties(t.Context(), nil); err != nil || st.Container() != name {
						t.Errorf("document not in blob %s of container %s: %v", blobName, name, err)
					}
				}
		},
		Unknown: "bucket",
		Secret:  "c2VjcmV0LWtleS1oZXJl",
		Bad: map[string]string{
			`{}`:                       `"url" is required`,
			`{"url": "nats://x:4222"}`: `"url"`,
			`{"url": "not a url"}`:     `"url"`,
			`{"url": "azblob://devstoreaccount1/c0ntainer?nonsense=1"}`:                                                          `nonsense`,
			`{"url": "azblob://devstoreaccount1/c0ntainer", "connection_string_env": "NO_SUCH_VAR_LH"}`:                          `NO_SUCH_VAR_LH`,
			`{"url": "azblob://devstoreaccount1/c0ntainer?identity=default", "endpoint": "http://127.0.0.1:1/devstoreaccount1"}`: `"endpoint"`,
			`{"url": "azblob://devstoreaccount1/c0ntainer", "endpoint": "ftp://x"}`:                                              `"endpoint"`,
			`{"url": "azblob://Bad_Account/c0ntainer"}`:                                                                          `Bad_Account`,
		},
	})
}

// TestCutConnection: when the network to the service goes silent, an operation fails by its
// context's deadline, and the store recovers once the network heals; see
// storetest.CutConnection.
func TestCutConnection(t *testing.T) {
	t.Parallel()
	e := emulator(t)
	name := newContainer(t, e)
	storetest.CutConnection(t, e.Addr, func(t *testing.T, addr string) store.Store {
		q := url.Values{"connection_string_env": {connEnv}, "endpoint": {"http://" + addr + "/devstoreaccount1"}}
		return openRaw(t, emulatorURL(name, "", q))
	})
}
