package redis

import (
	"net/url"
	"testing"

	"github.com/leasehold/leasehold/internal/cuttest"
	"github.com/leasehold/leasehold/servicetest"
)

// TestServiceType: Webda/RedisStore is registered, decodes its parameters strictly (A2), opens the
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
				if n, err := st.Client().Exists(t.Context(), prefix+key).Result(); err != nil || n != 1 {
					t.Errorf("document not under the configured prefix %q: %d, %v", prefix, n, err)
				}
			}
		},
		Unknown: "bucket",
		Secret:  "secretpw1",
		Bad: map[string]string{
			`{}`:                          `"url" is required`,
			`{"url": "postgres://x@y/z"}`: `"url"`,
			`{"url": "not a url at all"}`: `"url"`,
			`{"url": "redis://127.0.0.1:6379/0?nonsense=1"}`: `nonsense`,
			`{"url": "redis://:secretpw1@127.0.0.1:1/0"}`:    `"url"`,
		},
	})
}

// TestCutConnection: when the network to the server goes silent, an operation fails by its
// context's deadline, well before go-redis's own read timeout (E3), and the store recovers once the
// network heals; see storetest.CutConnection.
func TestCutConnection(t *testing.T) {
	t.Parallel()
	raw, _ := serverURL(t)
	cuttest.URL(t, raw, openStore, "read_timeout", "30s", "write_timeout", "30s")
}
