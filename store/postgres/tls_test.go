package postgres

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/testcerts"
	"github.com/leasehold/leasehold/internal/tlstest"
)

// TestTLSParams: pgx reads libpq's TLS parameters (sslmode, sslrootcert, sslcert, sslkey) from
// the URL as they are passed through, and password_file is this package's (N1, N2).
func TestTLSParams(t *testing.T) {
	c := testcerts.New(t)
	pw := c.Write(t, "pw", []byte("pg-pw-in-file-40c1\n"))
	q := url.Values{"sslmode": {"verify-full"}, "sslrootcert": {c.CA}, "sslcert": {c.ClientCert}, "sslkey": {c.ClientKey}, "password_file": {pw}}
	u := &url.URL{Scheme: "postgres", User: url.User("app"), Host: "db.internal:5432", Path: "/app", RawQuery: q.Encode()}
	cfg, _, err := parseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	tc := cfg.ConnConfig.TLSConfig
	// pgx reads the client certificate at each handshake, through a loader of its own: the
	// files were read once (the bad cases below fail), the configuration does not show them.
	if tc == nil || tc.RootCAs == nil || tc.ServerName != "db.internal" || tc.InsecureSkipVerify {
		t.Fatalf("TLS config %+v: want the CA and the server name db.internal, verified", tc)
	}
	if cfg.ConnConfig.Password != "pg-pw-in-file-40c1" {
		t.Errorf("password from password_file not used")
	}
	if strings.Contains(cfg.ConnString(), "pg-pw-in-file") {
		t.Errorf("the connection string holds the password")
	}

	for _, bad := range []struct {
		name  string
		q     url.Values
		user  *url.Userinfo
		wants []string
	}{
		{"unreadable CA", url.Values{"sslmode": {"verify-full"}, "sslrootcert": {filepath.Join(c.Dir, "none.pem")}}, nil, []string{"none.pem"}},
		{"CA not a certificate", url.Values{"sslmode": {"verify-full"}, "sslrootcert": {c.ClientKey}}, nil, []string{"CA"}},
		{"cert without key", url.Values{"sslmode": {"verify-full"}, "sslrootcert": {c.CA}, "sslcert": {c.ClientCert}}, nil, []string{"sslkey"}},
		{"key of another certificate", url.Values{"sslmode": {"verify-full"}, "sslrootcert": {c.CA}, "sslcert": {c.ClientCert}, "sslkey": {c.OtherKey}}, nil, []string{"key"}},
		{"password twice", url.Values{"password_file": {pw}}, url.UserPassword("app", "inurl-9f"), []string{`"password_file"`}},
		{"password file missing", url.Values{"password_file": {filepath.Join(c.Dir, "none")}}, url.User("app"), []string{`"password_file"`, "none"}},
	} {
		t.Run(bad.name, func(t *testing.T) {
			u := &url.URL{Scheme: "postgres", User: bad.user, Host: "127.0.0.1:5432", Path: "/test", RawQuery: bad.q.Encode()}
			_, _, err := parseURL(u)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range bad.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			tlstest.NoSecret(t, err.Error(), c, "pg-pw-in-file-40c1", "inurl-9f")
		})
	}
}
