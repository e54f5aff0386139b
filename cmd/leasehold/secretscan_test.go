//go:build unix

package main

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/testcerts"
	"github.com/leasehold/leasehold/internal/testenv"
)

// TestSecretsNeverShown runs the command over stores whose URLs carry passwords, tokens,
// password files and client keys, in --store, in LEASEHOLD_STORE and in a --config file, for
// runs that succeed, fail and log at debug level, and checks that no secret (a password, a
// token, the content of a password file, a line of a private key) appears in anything it
// prints, nor in CMD's environment (`env` is CMD) (T4, N2).
func TestSecretsNeverShown(t *testing.T) {
	certs := testcerts.New(t)
	dir := t.TempDir()
	const (
		pgPW     = "pg-s3cret-5a1e"
		myPW     = "my-s3cret-77cf"
		redisPW  = "redis-s3cret-31dd"
		natsTok  = "nats-t0ken-e09b"
		etcdPW   = "etcd-s3cret-6b20"
		filePW   = "file-s3cret-8c4a"
		configPW = "config-s3cret-1f3"
	)
	secrets := []string{pgPW, myPW, redisPW, natsTok, etcdPW, filePW, configPW}
	pwFile := certs.Write(t, "password", []byte(filePW+"\n"))
	tlsQ := "ca=" + url.QueryEscape(certs.CA) + "&cert=" + url.QueryEscape(certs.ClientCert) + "&key=" + url.QueryEscape(certs.ClientKey)
	badKeyQ := "cert=" + url.QueryEscape(certs.ClientCert) + "&key=" + url.QueryEscape(certs.OtherKey)
	pwFileQ := "password_file=" + url.QueryEscape(pwFile)
	lease := []string{"--lease", "secret-scan", "--lease-duration", "2s", "--renew-interval", "500ms"}

	type run struct {
		name   string
		server *testenv.Server // needed, if any
		env    []string
		args   []string
	}
	runs := []run{
		// Succeeding: PostgreSQL trusts local connections whatever the password, NATS ignores
		// a token it does not need.
		{"postgres status", &testenv.Postgres, nil, append([]string{"status", "--json", "--store", "postgres://postgres:" + pgPW + "@127.0.0.1:5432/test?sslmode=disable"}, lease[:2]...)},
		{"postgres run, debug logs, env as CMD", &testenv.Postgres, nil, append(append([]string{"run", "--try", "--log-level", "debug", "--store", "postgres://postgres:" + pgPW + "@127.0.0.1:5432/test?sslmode=disable"}, lease...), "--", "env")},
		{"postgres run from LEASEHOLD_STORE", &testenv.Postgres, []string{"LEASEHOLD_STORE=postgres://postgres@127.0.0.1:5432/test?sslmode=disable&" + pwFileQ}, append(append([]string{"run", "--try", "--log-level", "debug"}, lease...), "--", "env")},
		{"nats token status", &testenv.NATS, nil, append([]string{"status", "--store", "nats://" + natsTok + "@127.0.0.1:4222?storage=memory&bucket=secret_scan"}, lease[:2]...)},
		// Failing: wrong passwords, TLS against a server without it, bad key files.
		{"mariadb wrong password", &testenv.MySQL, nil, append([]string{"status", "--store", "mysql://root:" + myPW + "@127.0.0.1:3306/test"}, lease[:2]...)},
		{"mariadb password file", &testenv.MySQL, nil, append([]string{"status", "--store", "mysql://root@127.0.0.1:3306/test?" + pwFileQ}, lease[:2]...)},
		{"redis password, TLS to a plain server", &testenv.Redis, nil, append([]string{"status", "--store", "rediss://app:" + redisPW + "@127.0.0.1:6379/0?max_retries=0&dial_timeout=2s&" + tlsQ}, lease[:2]...)},
		{"redis password file run", &testenv.Redis, nil, append(append([]string{"run", "--log-level", "debug", "--store", "redis://app@127.0.0.1:6379/0?" + pwFileQ}, lease...), "--", "env")},
		{"redis key of another certificate", nil, nil, append([]string{"status", "--store", "redis://app:" + redisPW + "@127.0.0.1:6379/0?" + badKeyQ}, lease[:2]...)},
		{"etcd unreachable with TLS and password", nil, nil, append([]string{"status", "--timeout", "3s", "--store", "etcd://root:" + etcdPW + "@127.0.0.1:1?dial_timeout=500ms&" + tlsQ}, lease[:2]...)},
		{"etcd password file, key mismatch", nil, nil, append([]string{"status", "--store", "etcd://root@127.0.0.1:1?" + pwFileQ + "&" + badKeyQ}, lease[:2]...)},
		{"nats token, TLS to a plain server", &testenv.NATS, nil, append([]string{"status", "--store", "nats://" + natsTok + "@127.0.0.1:4222?dial_timeout=2s&" + tlsQ}, lease[:2]...)},
		{"unparsable URL with a password", nil, nil, append([]string{"status", "--store", "postgres://u:" + pgPW + "@host:bad/db"}, lease[:2]...)},
	}
	cfg := filepath.Join(dir, "app.json")
	if err := os.WriteFile(cfg, []byte(`{"services": {
		"Registry": {"type": "Webda/MySQLStore", "url": "mysql://root:`+configPW+`@127.0.0.1:3306/test"},
		"cluster": {"type": "StoreClusterService", "leaseDuration": 2000, "renewInterval": 500}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	runs = append(runs, run{"--config with a password", &testenv.MySQL, nil, []string{"status", "--config", cfg}},
		run{"--config run", &testenv.MySQL, nil, []string{"run", "--try", "--log-level", "debug", "--config", cfg, "--", "env"}})

	keyLines := append(testcerts.KeyMaterial(t, certs.ClientKey), testcerts.KeyMaterial(t, certs.OtherKey)...)
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			if r.server != nil {
				r.server.URL(t)
			}
			stdout, stderr, code := runLeaseholdEnv(t, r.env, r.args...)
			out := stdout + stderr
			t.Logf("exit %d:\n%s", code, out)
			if out == "" {
				t.Fatal("no output at all: nothing was checked")
			}
			for _, s := range secrets {
				if strings.Contains(out, s) {
					t.Errorf("the output holds the secret %q", s)
				}
			}
			for _, l := range keyLines {
				if strings.Contains(out, l) {
					t.Errorf("the output holds a line of a private key: %q", l)
				}
			}
			if strings.Contains(strings.Join(r.args, " "), "-- env") && code == 0 && !strings.Contains(stdout, "LEASEHOLD_TERM=") {
				t.Errorf("CMD (env) did not print its environment: the check of CMD's environment did not happen")
			}
		})
	}
}
