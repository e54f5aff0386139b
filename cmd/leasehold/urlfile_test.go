//go:build unix

package main

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/testenv"
)

// --config with a Registry whose URL comes from a file (urlFile, a mounted Secret) or an
// environment variable (urlEnv): the command uses that store, never prints the URL's password,
// whether it opens or not, and leaves the variable out of CMD's environment.
func TestConfigURLFileSecret(t *testing.T) {
	const secret = "urlfile-s3cret-90ad"
	dir := t.TempDir()
	b := make([]byte, 4)
	rand.Read(b)
	lease := "urlfile-" + hex.EncodeToString(b)
	config := func(name, registry string) string {
		t.Helper()
		return writeConfig(t, dir, name, `"Registry": `+registry+`,
			"cluster": {"type": "StoreClusterService", "leaseName": "`+lease+`", "leaseDuration": 2000, "renewInterval": 500}`)
	}
	writeURL := func(name string, u *url.URL) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(u.String()+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	check := func(t *testing.T, what, out string) {
		t.Helper()
		t.Logf("%s:\n%s", what, out)
		if out == "" {
			t.Errorf("%s: no output at all: nothing was checked", what)
		}
		if strings.Contains(out, secret) {
			t.Errorf("%s: the output holds the password of the URL", what)
		}
	}

	t.Run("works", func(t *testing.T) {
		u, err := url.Parse(testenv.Postgres.URL(t))
		if err != nil {
			t.Fatal(err)
		}
		// The test server trusts local connections whatever the password.
		u.User = url.UserPassword(u.User.Username(), secret)
		fileCfg := config("urlfile.json", `{"type": "Webda/PostgresStore", "urlFile": "`+writeURL("registry-url", u)+`"}`)
		envCfg := config("urlenv.json", `{"type": "Webda/PostgresStore", "urlEnv": "LEASEHOLD_TEST_REGISTRY_URL"}`)
		env := []string{"LEASEHOLD_TEST_REGISTRY_URL=" + u.String()}

		stdout, stderr, code := runLeasehold(t, "status", "--config", fileCfg)
		check(t, "status", stdout+stderr)
		if code != 3 || !strings.Contains(stdout, lease) || !strings.Contains(stdout, "missing") {
			t.Errorf("status --config with urlFile, before any run: exit %d, want 3 (missing) naming %s", code, lease)
		}
		stdout, stderr, code = runLeaseholdEnv(t, nil, "run", "--try", "--log-level", "debug", "--config", fileCfg, "--", "env")
		check(t, "run --try -- env", stdout+stderr)
		first := envTerm(stdout)
		if code != 0 || first == 0 || !strings.Contains(stdout, "LEASEHOLD_LEASE="+lease) {
			t.Errorf("run --try --config with urlFile: exit %d, want 0 and CMD (env) run in a term of %s", code, lease)
		}
		stdout, stderr, code = runLeaseholdEnv(t, env, "run", "--try", "--log-level", "debug", "--config", envCfg, "--", "env")
		check(t, "run --try -- env, urlEnv", stdout+stderr)
		if code != 0 || envTerm(stdout) <= first {
			t.Errorf("run --try --config with urlEnv: exit %d, want 0 and CMD (env) run in a term above %d of the same lease", code, first)
		}
		if strings.Contains(stdout, "LEASEHOLD_TEST_REGISTRY_URL=") {
			t.Errorf("CMD's environment holds the variable urlEnv names, as LEASEHOLD_STORE it never does")
		}
	})

	t.Run("refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := l.Addr().String()
		l.Close()
		down := writeURL("down-url", &url.URL{Scheme: "postgres", User: url.UserPassword("app", secret), Host: closed, Path: "/app",
			RawQuery: "sslmode=disable&connect_timeout=2"})
		missing := filepath.Join(dir, "no-such-url")
		for _, tc := range []struct {
			name, registry string
			env            []string
			want           []string
		}{
			{"unreachable", `{"type": "Webda/PostgresStore", "urlFile": "` + down + `"}`, nil,
				[]string{`"Registry"`, `"urlFile"`, down, "xxxxx"}},
			{"missing file", `{"type": "Webda/PostgresStore", "urlFile": "` + missing + `"}`, nil,
				[]string{`"Registry"`, `"urlFile"`, missing}},
			{"unset variable", `{"type": "Webda/PostgresStore", "urlEnv": "LEASEHOLD_TEST_NO_SUCH_URL"}`, nil,
				[]string{`"Registry"`, `"urlEnv"`, "LEASEHOLD_TEST_NO_SUCH_URL", "not set"}},
			{"url and urlEnv", `{"type": "Webda/PostgresStore", "url": "postgres://app:` + secret + `@h/db", "urlEnv": "LEASEHOLD_TEST_REGISTRY_URL"}`,
				[]string{"LEASEHOLD_TEST_REGISTRY_URL=postgres://app:" + secret + "@h/db"}, []string{`"Registry"`, `"url" and "urlEnv"`}},
		} {
			cfg := config(strings.ReplaceAll(tc.name, " ", "-")+".json", tc.registry)
			stdout, stderr, code := runLeaseholdEnv(t, tc.env, "status", "--config", cfg)
			check(t, tc.name, stdout+stderr)
			if code == 0 {
				t.Errorf("%s: status --config exited 0", tc.name)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("%s: stderr does not say %q", tc.name, w)
				}
			}
		}
	})
}

// envTerm is LEASEHOLD_TERM in the output of env, 0 when absent.
func envTerm(out string) uint64 {
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "LEASEHOLD_TERM="); ok {
			t, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return t
		}
	}
	return 0
}
