package driver_test

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/testcerts"
	"github.com/leasehold/leasehold/store/driver"
)

func TestTakeTLS(t *testing.T) {
	certs := testcerts.New(t)
	notPEM := certs.Write(t, "not.pem", []byte("not a certificate\n"))
	keyOnly := certs.ClientKey
	missing := filepath.Join(certs.Dir, "missing.pem")

	t.Run("none", func(t *testing.T) {
		for _, raw := range []string{"", "tls=false", "tls=0", "prefix=x"} {
			q, _ := url.ParseQuery(raw)
			cfg, err := driver.TakeTLS(q)
			if err != nil || cfg != nil {
				t.Errorf("%q: got %v, %v; want no TLS", raw, cfg, err)
			}
		}
	})
	t.Run("full", func(t *testing.T) {
		q := url.Values{"ca": {certs.CA}, "cert": {certs.ClientCert}, "key": {certs.ClientKey}, "servername": {"db.internal"}, "prefix": {"p"}}
		cfg, err := driver.TakeTLS(q)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.RootCAs == nil || len(cfg.Certificates) != 1 || cfg.ServerName != "db.internal" || cfg.InsecureSkipVerify {
			t.Errorf("config %+v", cfg)
		}
		if len(q) != 1 || q.Get("prefix") != "p" {
			t.Errorf("the TLS parameters were not removed: %v", q)
		}
	})
	t.Run("tls=true alone", func(t *testing.T) {
		cfg, err := driver.TakeTLS(url.Values{"tls": {"true"}})
		if err != nil || cfg == nil || cfg.RootCAs != nil || cfg.MinVersion == 0 {
			t.Errorf("got %+v, %v; want TLS with the system's roots", cfg, err)
		}
	})
	for _, c := range []struct {
		name  string
		q     url.Values
		wants []string
	}{
		{"bad tls", url.Values{"tls": {"yes"}}, []string{`"tls"`, `"yes"`}},
		{"tls=false with ca", url.Values{"tls": {"false"}, "ca": {certs.CA}}, []string{`"tls" is false`}},
		{"missing CA file", url.Values{"ca": {missing}}, []string{`"ca"`, missing, "no such file"}},
		{"CA not PEM", url.Values{"ca": {notPEM}}, []string{`"ca"`, notPEM, "no PEM certificate"}},
		{"CA holding only a key", url.Values{"ca": {keyOnly}}, []string{`"ca"`, keyOnly, "no PEM certificate"}},
		{"cert without key", url.Values{"cert": {certs.ClientCert}}, []string{`"cert"`, certs.ClientCert, `needs "key"`}},
		{"key without cert", url.Values{"key": {certs.ClientKey}}, []string{`"key"`, certs.ClientKey, `needs "cert"`}},
		{"missing cert file", url.Values{"cert": {missing}, "key": {certs.ClientKey}}, []string{`"cert"`, missing}},
		{"missing key file", url.Values{"cert": {certs.ClientCert}, "key": {missing}}, []string{`"key"`, missing}},
		{"key of another certificate", url.Values{"cert": {certs.ClientCert}, "key": {certs.OtherKey}}, []string{`"cert" and "key"`, certs.ClientCert, certs.OtherKey, "does not match"}},
		{"cert and key switched", url.Values{"cert": {certs.ClientKey}, "key": {certs.ClientCert}}, []string{`"cert"`, certs.ClientKey, "PEM certificate"}},
		{"cert not PEM", url.Values{"cert": {notPEM}, "key": {certs.ClientKey}}, []string{`"cert"`, notPEM}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := driver.TakeTLS(c.q)
			if err == nil {
				t.Fatalf("no error (config %+v)", cfg)
			}
			for _, w := range c.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			for _, f := range []string{certs.ClientKey, certs.OtherKey, certs.CA} {
				for _, line := range testcerts.KeyMaterial(t, f) {
					if strings.Contains(err.Error(), line) {
						t.Errorf("error %q quotes the content of %s", err, f)
					}
				}
			}
		})
	}
}

func TestTakeSecretFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pw := write("pw", "s3cr3t-in-file\n")
	crlf := write("crlf", "with space \r\n")
	empty := write("empty", "\n")

	q := url.Values{"password_file": {pw}, "x": {"1"}}
	s, ok, err := driver.TakeSecretFile(q, "password_file")
	if err != nil || !ok || s != "s3cr3t-in-file" {
		t.Errorf("got %q, %v, %v", s, ok, err)
	}
	if q.Has("password_file") || !q.Has("x") {
		t.Errorf("parameter not removed: %v", q)
	}
	if s, _, _ := driver.TakeSecretFile(url.Values{"p": {crlf}}, "p"); s != "with space " {
		t.Errorf("only the line ending goes: got %q", s)
	}
	if _, ok, err := driver.TakeSecretFile(url.Values{}, "p"); ok || err != nil {
		t.Errorf("absent parameter: %v, %v", ok, err)
	}
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "nope"), "no such file"},
		{empty, "is empty"},
		{"", "is empty"},
	} {
		_, _, err := driver.TakeSecretFile(url.Values{"password_file": {c.path}}, "password_file")
		if err == nil || !strings.Contains(err.Error(), `"password_file"`) || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one naming the parameter, the file and %q", c.path, err, c.want)
		}
	}

	u, _ := url.Parse("redis://user:inurl@host/0?password_file=" + url.QueryEscape(pw))
	if _, _, err := driver.TakePassword(u, u.Query(), false); err == nil || strings.Contains(err.Error(), "inurl") || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("password in the URL and in a file: %v, want an error quoting neither", err)
	}
	u, _ = url.Parse("mysql://host/db?password_file=" + url.QueryEscape(pw))
	if _, _, err := driver.TakePassword(u, u.Query(), true); err == nil || !strings.Contains(err.Error(), "user name") {
		t.Errorf("password file without a user: %v", err)
	}
	u, _ = url.Parse("mysql://app@host/db?password_file=" + url.QueryEscape(pw))
	if p, ok, err := driver.TakePassword(u, u.Query(), true); p != "s3cr3t-in-file" || !ok || err != nil {
		t.Errorf("got %q, %v, %v", p, ok, err)
	}
	u, _ = url.Parse("mysql://app:inurl@host/db")
	if p, ok, err := driver.TakePassword(u, u.Query(), true); p != "inurl" || !ok || err != nil {
		t.Errorf("got %q, %v, %v", p, ok, err)
	}
}
