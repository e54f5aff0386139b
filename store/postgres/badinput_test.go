package postgres

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
	sqltest.Unreachable(t, "postgres://leasehold:"+secret+"@"+addr+"/test?sslmode=disable", addr, secret, openStore)
}

// TestWrongCredentials: a user the server does not know (the test server trusts every password
// of a known user, so a wrong password alone would be accepted) is refused with an error that
// names the user and not the password.
func TestWrongCredentials(t *testing.T) {
	t.Parallel()
	u := testurl.Parse(t, serverURL(t))
	raw := "postgres://no_such_user_lh:" + secret + "@" + u.Host + u.Path + "?sslmode=disable"
	_, err := Open(t.Context(), raw)
	if err == nil {
		t.Fatal("Open as a nonexistent user succeeded")
	}
	msg := err.Error()
	t.Log(err)
	if strings.Contains(msg, secret) {
		t.Errorf("error reveals the password: %s", msg)
	}
	if !strings.Contains(msg, "no_such_user_lh") {
		t.Errorf("error does not name the user: %s", msg)
	}
	if !errors.Is(err, store.ErrConfig) {
		t.Errorf("C7: a refused user is not a configuration error (store.ErrConfig): %s", msg)
	}
	// The password in a query parameter is hidden too.
	_, err = Open(t.Context(), "postgres://no_such_user_lh@"+u.Host+u.Path+"?sslmode=disable&password="+secret)
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("Open with password= as a parameter: %v", err)
	}
}

// TestBadURL: parameters are checked, and errors name them without quoting the password.
func TestBadURL(t *testing.T) {
	t.Parallel()
	storetest.BadURLs(t, secret, map[string]string{
		"postgres://u:" + secret + "@127.0.0.1:1/db?table=bad-name":       "table",
		"postgres://u:" + secret + "@127.0.0.1:1/db?table=":               "table",
		"postgres://u:" + secret + "@127.0.0.1:1/db?pool_max_conns=zero":  "pool_max_conns",
		"postgres://u:" + secret + "@127.0.0.1:1/db?connect_timeout=soon": "connect_timeout",
		"mysql://u:" + secret + "@127.0.0.1:1/db":                         "scheme",
		"postgres://u:" + secret + "@127.0.0.1:1/db?sslmod=disable":       `unknown URL parameter "sslmod" (known: table, `,
		"postgres://u:" + secret + "@127.0.0.1:1/db?work_mem=64MB":        `unknown URL parameter "work_mem" (known: table, `,
	}, func(ctx context.Context, raw string) (store.Store, error) { return Open(ctx, raw) })
}

// TestRowNotAnObject: a row written by another program that is not a JSON object gives errors
// naming the key, and no operation but an unconditional Delete changes it (jsonb || would
// otherwise turn it into an array).
func TestRowNotAnObject(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	rows := map[string]string{"array": `[1, 2]`, "string": `"text"`, "number": `7`, "null": `null`}
	for key, raw := range rows {
		if _, err := s.rawPool().Exec(ctx, `INSERT INTO `+s.Table()+` (id, doc) VALUES ($1, $2::jsonb)`, key, raw); err != nil {
			t.Fatal(err)
		}
	}
	for key, raw := range rows {
		foreigndoc.Row(t, s, key, nil)
		var got string
		if err := s.rawPool().QueryRow(ctx, `SELECT doc::text FROM `+s.Table()+` WHERE id = $1`, key).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if strings.ReplaceAll(got, " ", "") != strings.ReplaceAll(raw, " ", "") {
			t.Errorf("the %s row was changed to %s", key, got)
		}
		if err := s.Delete(ctx, key, nil); err != nil {
			t.Errorf("unconditional Delete of the %s row: %v", key, err)
		}
	}
}

// TestUnreachableSeveralHosts: with several hosts, none reachable, Open fails with an error
// naming them and not the password.
func TestUnreachableSeveralHosts(t *testing.T) {
	t.Parallel()
	a, b := testenv.ClosedPort(t), testenv.ClosedPort(t)
	sqltest.Unreachable(t, "postgres://leasehold:"+secret+"@"+a+","+b+"/test?sslmode=disable&target_session_attrs=read-write", b, secret, openStore)
}
