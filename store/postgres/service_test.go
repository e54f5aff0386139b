package postgres

import (
	"testing"

	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/servicetest"
)

// TestServiceType: Webda/PostgresStore is registered, decodes its parameters strictly (A2),
// opens the store in Init without an application, works as a store.Store in its own table,
// closes it in Stop, refuses bad parameters naming them and never the password, and works as
// an application's Registry (A4); see package servicetest.
func TestServiceType(t *testing.T) {
	t.Parallel()
	servicetest.Run(t, servicetest.Case[*Store]{
		Type: ServiceType,
		Setup: func(t *testing.T) (map[string]any, func(*testing.T, *Store, string)) {
			table := testenv.TableName(t)
			return map[string]any{"url": serverURL(t), "table": table}, func(t *testing.T, st *Store, _ string) {
				t.Cleanup(func() { dropTable(t, st) })
				if got := st.Table(); got != table {
					t.Errorf("table = %q, want the parameter's %q", got, table)
				}
			}
		},
		Unknown: "tabel",
		Secret:  secret,
		Bad: map[string]string{
			`{}`: `parameter "url" is required`,
			`{"url": "postgres://u:` + secret + `@127.0.0.1:1/db", "table": "no-dash"}`: "parameter table",
			`{"url": "redis://u:` + secret + `@127.0.0.1:1/0"}`:                         `parameter "url"`,
			`{"url": "postgres://u:` + secret + `@127.0.0.1:1/db?sslmode=disable"}`:     `parameter "url"`,
			`{"url": "://u:` + secret + `@x"}`:                                          `parameter "url"`,
		},
	})
}
