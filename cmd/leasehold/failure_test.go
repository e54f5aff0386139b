//go:build unix

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/testenv"
)

// A store that cannot be reached, that refuses the credentials, or that rejects its URL is a
// failure: exit 1 with one line on stderr naming the store (its password hidden) and what went
// wrong, and no usage. Exit 2 is for bad input only (TestBadInput). run waits for a store that
// cannot be reached (C7: TestRunWaitsForStoreNotReady), and stops at once on the others.
func TestStoreFailures(t *testing.T) {
	dir := t.TempDir()
	pgDown := writeConfig(t, dir, "pg-down.json", `
		"Registry": {"type": "Webda/PostgresStore", "url": "postgres://nobody:pg-secret@127.0.0.1:1/x"},
		"cluster": {"type": "StoreClusterService", "leaseDuration": 2000, "renewInterval": 500}`)
	for _, tc := range []struct {
		name   string
		server *testenv.Server // that the case needs, if any
		store  string          // the --store URL, or "" for --config
		config string
		cmds   []string // the subcommands to try
		want   []string // in the one line
	}{
		{name: "connection refused", store: "postgres://nobody:pg-secret@127.0.0.1:1/x", cmds: []string{"status", "repair"},
			want: []string{"postgres://nobody:xxxxx@127.0.0.1:1/x", "127.0.0.1:1", "connection refused"}},
		{name: "unknown PostgreSQL role", server: &testenv.Postgres, store: "postgres://nobody@127.0.0.1:5432/test?sslmode=disable",
			cmds: []string{"run", "status", "repair"}, want: []string{"127.0.0.1:5432", `role "nobody" does not exist`}},
		{name: "wrong MariaDB password", server: &testenv.MySQL, store: "mysql://root:my-secret@127.0.0.1:3306/test",
			cmds: []string{"run", "status", "repair"}, want: []string{"mysql://root:xxxxx@127.0.0.1:3306/test", "Access denied"}},
		{name: "wrong Redis password", server: &testenv.Redis, store: "redis://nobody:redis-secret@127.0.0.1:6379/0",
			cmds: []string{"run", "status"}, want: []string{"127.0.0.1:6379", "WRONGPASS"}},
		{name: "Redis refused", store: "redis://127.0.0.1:1/0", cmds: []string{"status"},
			want: []string{"127.0.0.1:1", "connection refused"}},
		{name: "NATS refused", store: "nats://127.0.0.1:1?dial_timeout=1s", cmds: []string{"status"},
			want: []string{"127.0.0.1:1"}},
		{name: "etcd unreachable", store: "etcd://127.0.0.1:1?dial_timeout=500ms", cmds: []string{"status"},
			want: []string{"etcd", "127.0.0.1:1"}},
		{name: "SQLite directory missing", store: "sqlite://" + filepath.Join(dir, "nowhere", "r.db"), cmds: []string{"run", "status"},
			want: []string{filepath.Join(dir, "nowhere", "r.db"), "unable to open"}},
		{name: "parameter the backend rejects", store: "redis://user:redis-secret@127.0.0.1:1/0?bogus=1", cmds: []string{"run", "status"},
			want: []string{"bogus"}},
		{name: "relative file URL", store: "file:registry.json", cmds: []string{"run", "status", "repair"},
			want: []string{"file:registry.json", "relative path"}},
		{name: "configuration's Registry refused", config: pgDown, cmds: []string{"status"},
			want: []string{"127.0.0.1:1", "connection refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.server != nil {
				tc.server.URL(t) // skips, or fails under LEASEHOLD_REQUIRE_SERVERS=1
			}
			for _, cmd := range tc.cmds {
				args := []string{cmd, "--store", tc.store}
				if tc.config != "" {
					args = []string{cmd, "--config", tc.config}
				}
				if cmd == "run" {
					args = append(args, "--lease-duration", "2s", "--renew-interval", "500ms", "--", "true")
				} else {
					args = append(args, "--timeout", "5s")
				}
				stdout, stderr, code := runLeasehold(t, args...)
				checkFailure(t, cmd, code, stdout, stderr, tc.want...)
			}
		})
	}
}

// checkFailure checks the output of a command that failed: exit 1, one line on stderr
// starting with "leasehold: " and holding each of want, no usage, no password, nothing on
// stdout.
func checkFailure(t *testing.T, what string, code int, stdout, stderr string, want ...string) {
	t.Helper()
	msg := strings.TrimSuffix(stderr, "\n")
	switch {
	case code != 1:
		t.Errorf("%s: exit %d, want 1\nstderr:\n%s", what, code, stderr)
	case strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "leasehold: "):
		t.Errorf("%s: stderr is not one line starting with \"leasehold: \":\n%s", what, stderr)
	case strings.Contains(stderr, "Usage") || strings.Contains(stderr, "secret") || stdout != "":
		t.Errorf("%s: usage, password or stdout output:\nstdout: %s\nstderr: %s", what, stdout, stderr)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: %q does not name %q", what, msg, w)
		}
	}
}

// version takes no arguments (exit 2, one line, and a pointer to leasehold --help, version
// having no --help of its own); the usage documents the exit statuses.
func TestOtherCommandsExitCodes(t *testing.T) {
	_, stderr, code := runLeasehold(t, "version", "extra")
	if first, _, _ := strings.Cut(stderr, "\n"); code != 2 || !strings.Contains(first, "no arguments") || !isUsageError(stderr, "leasehold") {
		t.Errorf("version extra: exit %d, want 2, one line and a pointer to leasehold --help:\n%s", code, stderr)
	}
	out, _, code := runLeasehold(t, "--help")
	if code != 0 || !strings.Contains(out, "Exit status:") || !strings.Contains(out, "2    bad input") {
		t.Errorf("--help: exit %d, want 0 and the exit statuses:\n%s", code, out)
	}
}
