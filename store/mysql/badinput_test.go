package mysql

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/foreigndoc"
	"github.com/leasehold/leasehold/internal/sqltest"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/internal/testurl"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

const secret = "s3cr3t-Passw0rd"

// TestUnreachableServer: Open fails with an error naming the address and not the password (T4).
func TestUnreachableServer(t *testing.T) {
	t.Parallel()
	addr := testenv.ClosedPort(t)
	sqltest.Unreachable(t, "mysql://root:"+secret+"@"+addr+"/test", addr, secret, openStore)
}

// TestWrongPassword: the server refuses root with a wrong password; the error says so without
// the password.
func TestWrongPassword(t *testing.T) {
	t.Parallel()
	u := testurl.Parse(t, serverURL(t))
	u.User = nil
	raw := "mysql://root:" + secret + "@" + u.Host + u.Path
	_, err := Open(t.Context(), raw)
	if err == nil {
		t.Fatal("Open as root with a wrong password succeeded")
	}
	t.Log(err)
	if strings.Contains(err.Error(), secret) {
		t.Errorf("error reveals the password: %v", err)
	}
	if !strings.Contains(err.Error(), "Access denied") {
		t.Errorf("error does not say access was denied: %v", err)
	}
	if !errors.Is(err, store.ErrConfig) {
		t.Errorf("C7: refused credentials are not a configuration error (store.ErrConfig): %v", err)
	}
}

// TestBadURL: parameters are checked, and errors name them without quoting the password.
func TestBadURL(t *testing.T) {
	t.Parallel()
	storetest.BadURLs(t, secret, map[string]string{
		"mysql://u:" + secret + "@127.0.0.1:1/db?table=bad-name":         "table",
		"mysql://u:" + secret + "@127.0.0.1:1/db?max_open_conns=0":       "max_open_conns",
		"mysql://u:" + secret + "@127.0.0.1:1/db?conn_max_lifetime=soon": "conn_max_lifetime",
		"mysql://u:" + secret + "@127.0.0.1:1/db?readTimeout=soon":       "soon",
		"mysql://u:" + secret + "@/db":                                   "host",
		"mysql://u:" + secret + "@127.0.0.1:1/db?readtimeout=5s":         `unknown URL parameter "readtimeout" (known: table, `,
		"mysql://u:" + secret + "@127.0.0.1:1/db?sql_mode=ANSI":          `unknown URL parameter "sql_mode" (known: table, `,
		"postgres://u:" + secret + "@127.0.0.1:1/db":                     "scheme",
	}, func(ctx context.Context, raw string) (store.Store, error) { return Open(ctx, raw) })
}

// TestRowNotAnObject: rows written by another program that are not JSON objects, or not JSON at
// all (in a table created beforehand with a text column), give errors naming the key, and no
// operation but an unconditional Delete changes them.
func TestRowNotAnObject(t *testing.T) {
	t.Parallel()
	table := testenv.TableName(t)
	db := rawDB(t)
	ctx := t.Context()
	t.Cleanup(func() { dropTable(t, table) })
	// A LONGTEXT column, not JSON: the store uses an existing table as it is.
	if _, err := db.ExecContext(ctx, "CREATE TABLE `"+table+"` (id VARBINARY(1024) NOT NULL PRIMARY KEY, doc LONGTEXT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{"array": `[1, 2]`, "string": `"text"`, "number": `7`, "null": `null`, "garbage": `{"a": 1`}
	for key, raw := range rows {
		if _, err := db.ExecContext(ctx, "INSERT INTO `"+table+"` (id, doc) VALUES (?, ?)", key, raw); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(ctx, testurl.With(t, serverURL(t), "table", table))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for key, raw := range rows {
		foreigndoc.Row(t, s, key, 1)
		var got string
		if err := db.QueryRowContext(ctx, "SELECT doc FROM `"+table+"` WHERE id = ?", key).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != raw {
			t.Errorf("the %s row was changed to %s", key, got)
		}
		if err := s.Delete(ctx, key, nil); err != nil {
			t.Errorf("unconditional Delete of the %s row: %v", key, err)
		}
	}
}
