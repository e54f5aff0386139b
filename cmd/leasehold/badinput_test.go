//go:build unix

package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad input exits 2 with one line naming what is wrong, then a line pointing to --help, never
// the usage after it (the line that says what is wrong would scroll out of sight) nor a stack
// trace.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	store := "file://" + filepath.Join(dir, "r.json")
	badConfig := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(badConfig, []byte(`{"services": {"cluster": {"type": "StoreClusterService", "leaseDuration": 1000, "renewInterval": 2000}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tinyR := writeConfig(t, dir, "tiny-r.json", `"Registry": {"type": "Webda/FileStore", "path": "`+filepath.Join(dir, "r.json")+`"},
		"cluster": {"type": "StoreClusterService", "leaseDuration": 2000, "renewInterval": 5}`)
	noCluster := filepath.Join(dir, "nocluster.json")
	if err := os.WriteFile(noCluster, []byte(`{"services": {"Registry": {"type": "Webda/MemoryStore"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string // in the first line
	}{
		{"no command", nil, "missing command"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown flag", []string{"run", "--bogus", "--", "true"}, "--bogus"},
		{"flag a word of another", []string{"run", "--id", "x", "--", "true"}, "flag provided but not defined: --id (did you mean --instance-id?)"},
		{"misspelt flag", []string{"status", "--lease-duraton", "2s"}, "(did you mean --lease-duration?)"},
		{"missing --", []string{"run", "--store", store, "true"}, "missing --"},
		{"nothing after --", []string{"run", "--store", store, "--"}, "missing the command"},
		{"no command at all", []string{"run", "--store", store}, "missing --"},
		{"R >= L", []string{"run", "--store", store, "--lease-duration", "1s", "--renew-interval", "1s", "--", "true"}, "--renew-interval"},
		{"negative L", []string{"status", "--store", store, "--lease-duration", "-1s"}, "--lease-duration"},
		{"bad duration", []string{"status", "--store", store, "--lease-duration", "soon"}, "--lease-duration"},
		{"unknown scheme", []string{"status", "--store", "foo://x/y"}, `unknown scheme "foo"`},
		{"no scheme", []string{"status", "--store", "/tmp/r.json"}, "no scheme"},
		{"bad URL", []string{"status", "--store", "redis://user:secret@[::1"}, "--store"},
		{"grace too long", []string{"run", "--store", store, "--lease-duration", "2s", "--renew-interval", "500ms", "--grace", "1s", "--", "true"}, "--grace 1s exceeds"},
		{"bad log format", []string{"status", "--store", store, "--log-format", "xml"}, "--log-format"},
		{"bad log level", []string{"status", "--store", store, "--log-level", "loud"}, "--log-level"},
		{"store and config", []string{"status", "--store", store, "--config", badConfig}, "--store and --config"},
		{"config R >= L", []string{"run", "--config", badConfig, "--", "true"}, "renewInterval"},
		{"config without cluster", []string{"run", "--config", noCluster, "--", "true"}, "no cluster service"},
		{"missing config", []string{"status", "--config", filepath.Join(dir, "none.json")}, "--config"},
		{"empty lease", []string{"status", "--store", store, "--lease", ""}, "--lease"},
		{"status argument", []string{"status", "--store", store, "extra"}, "no arguments"},
		{"demo instances", []string{"demo", "--instances", "1"}, "--instances"},
		{"L below the floor", []string{"status", "--store", store, "--lease-duration", "15"}, "--lease-duration 15ms is below 100ms"},
		{"R below the floor", []string{"run", "--store", store, "--renew-interval", "5ms", "--", "true"}, "--renew-interval 5ms is below 10ms"},
		{"repair L below the floor", []string{"repair", "--store", store, "--lease-duration", "10"}, "--lease-duration 10ms is below 100ms"},
		{"demo R below the floor", []string{"demo", "--renew-interval", "5"}, "--renew-interval 5ms is below 10ms"},
		{"config R below the floor", []string{"run", "--config", tinyR, "--", "true"}, `parameter "renewInterval" 5ms is below 10ms`},
		{"negative bare number", []string{"status", "--store", store, "--renew-interval", "-5"}, "negative duration -5 ms"},
		{"bad metrics addr", []string{"run", "--store", store, "--metrics-addr", "nowhere", "--", "true"}, "--metrics-addr"},
	} {
		stdout, stderr, code := runLeasehold(t, tc.args...)
		first, _, _ := strings.Cut(stderr, "\n")
		if code != 2 {
			t.Errorf("%s: exit %d, want 2; stderr:\n%s", tc.name, code, stderr)
			continue
		}
		if !strings.HasPrefix(first, "leasehold: ") || !strings.Contains(first, tc.want) {
			t.Errorf("%s: first line %q, want it to contain %q", tc.name, first, tc.want)
		}
		if !isUsageError(stderr, "") {
			t.Errorf("%s: want one line, then a pointer to --help, and no usage:\n%s", tc.name, stderr)
		}
		if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "secret") || stdout != "" {
			t.Errorf("%s: stack trace, credential or stdout output:\nstdout: %s\nstderr: %s", tc.name, stdout, stderr)
		}
	}
}

// help goes to stdout and exits 0; version names the linked stores.
func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"status", "-h"}, {"demo", "--help"}} {
		out, _, code := runLeasehold(t, args...)
		if code != 0 || !strings.Contains(out, "Usage") {
			t.Errorf("%v: exit %d, output %q", args, code, out)
		}
	}
	out, _, code := runLeasehold(t, "version")
	if code != 0 {
		t.Fatalf("version exited %d", code)
	}
	for _, scheme := range []string{"file", "mem", "sqlite", "postgres", "mysql", "redis", "etcd", "nats"} {
		if !strings.Contains(out, scheme) {
			t.Errorf("version output lacks the store %q:\n%s", scheme, out)
		}
	}
}

// An unknown flag is matched to the one it most likely meant, or to none.
func TestNearestFlag(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	for _, name := range []string{"instance-id", "store", "store-file", "lease", "lease-duration", "holders", "hold-at-least"} {
		fs.String(name, "", "")
	}
	for name, want := range map[string]string{"id": "instance-id", "stor": "store", "lease-duraton": "lease-duration", "holder": "holders", "bogus": "", "x": ""} {
		if got := nearestFlag(fs, name); got != want {
			t.Errorf("nearestFlag(%q) = %q, want %q", name, got, want)
		}
	}
}

// isUsageError reports whether stderr is a usage error as Main writes it: one line, then one
// pointing to the --help of cmd ("leasehold run"; any command when ""), and nothing else.
func isUsageError(stderr, cmd string) bool {
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "leasehold: ") || strings.Contains(stderr, "Usage:") {
		return false
	}
	if cmd == "" {
		return strings.HasPrefix(lines[1], "Run 'leasehold") && strings.HasSuffix(lines[1], " --help' for usage.")
	}
	return lines[1] == "Run '"+cmd+" --help' for usage."
}
