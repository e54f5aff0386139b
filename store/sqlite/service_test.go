package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/leasehold/leasehold/servicetest"
)

// TestServiceType: Webda/SQLiteStore is registered, decodes its parameters strictly (A2),
// opens the store in Init without an application, works as a store.Store in the table its
// parameter names, closes it in Stop, refuses bad parameters naming them, and works as an
// application's Registry (A4); see package servicetest.
func TestServiceType(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	servicetest.Run(t, servicetest.Case[*Store]{
		Type: ServiceType,
		Setup: func(t *testing.T) (map[string]any, func(*testing.T, *Store, string)) {
			return map[string]any{"url": fileURL(t, ""), "table": "mine"}, func(t *testing.T, st *Store, _ string) {
				if got := st.Table(); got != "mine" {
					t.Errorf("table = %q, want the parameter's mine", got)
				}
			}
		},
		Unknown: "path",
		Bad: map[string]string{
			`{}`: `parameter "url" is required`,
			`{"url": "sqlite://` + dir + `/x.db", "table": "no-dash"}`:          "parameter table",
			`{"url": "sqlite://relative.db"}`:                                   `parameter "url"`,
			`{"url": "mem://"}`:                                                 `parameter "url"`,
			`{"url": "sqlite://` + filepath.Join(dir, "missing", "x.db") + `"}`: `parameter "url"`,
		},
	})
}
