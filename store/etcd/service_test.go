package etcd

import (
	"net/url"
	"testing"

	"github.com/leasehold/leasehold/internal/cuttest"
	"github.com/leasehold/leasehold/servicetest"
)

// TestServiceType: Webda/EtcdStore is registered, decodes its parameters strictly (A2), opens the
// store in Init without an application, works as a store.Store under the prefix its parameter
// names, closes it in Stop, refuses bad parameters naming them and never the password, and
// works as an application's Registry (A4); see package servicetest.
func TestServiceType(t *testing.T) {
	t.Parallel()
	servicetest.Run(t, servicetest.Case[*Store]{
		Type: ServiceType,
		Setup: func(t *testing.T) (map[string]any, func(*testing.T, *Store, string)) {
			raw, prefix := serverURL(t)
			u, _ := url.Parse(raw)
			u.RawQuery = "" // the prefix comes from the parameter
			return map[string]any{"url": u.String(), "prefix": prefix}, func(t *testing.T, st *Store, key string) {
				if resp, err := st.Client().Get(t.Context(), prefix+key); err != nil || len(resp.Kvs) != 1 {
					t.Errorf("document not under the configured prefix %q: %v, %v", prefix, resp, err)
				}
			}
		},
		Unknown: "bucket",
		Secret:  "secretpw1",
		Bad: map[string]string{
			`{}`:                          `"url" is required`,
			`{"url": "postgres://x@y/z"}`: `"url"`,
			`{"url": "not a url at all"}`: `"url"`,
			`{"url": "etcd://127.0.0.1:2379?nonsense=1"}`:               `nonsense`,
			`{"url": "etcd://u:secretpw1@127.0.0.1:1?dial_timeout=1s"}`: `"url"`,
		},
	})
}

// TestCutConnection: when the network to the server goes silent, an operation fails by its
// context's deadline, well before the keepalive would notice (E3), and the store recovers once the
// network heals; see storetest.CutConnection.
func TestCutConnection(t *testing.T) {
	t.Parallel()
	raw, _ := serverURL(t)
	cuttest.URL(t, raw, openStore, "keepalive", "0")
}
