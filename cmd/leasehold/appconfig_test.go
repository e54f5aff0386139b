//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeConfig writes an application's configuration in the test's directory.
func writeConfig(t *testing.T, dir, name, services string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(`{"services": {`+services+`}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// --config takes the application's own configuration as it is: its services of types the
// command does not link (MyApp/Poller) are left aside, the Registry and the cluster service are
// used (A1, A4, A5, S1).
func TestConfigOfTheApplication(t *testing.T) {
	w := newWorld(t)
	registry := filepath.Join(w.dir, "app-registry.json")
	cfg := writeConfig(t, w.dir, "app.json", `
		"poller": {"type": "MyApp/Poller", "interval": "10s", "target": {"url": "https://example.com"}},
		"Registry": {"type": "Webda/FileStore", "path": "`+registry+`"},
		"cluster": {"type": "Webda/StoreClusterService", "leaseName": "app-lease", "leaseDuration": 2000, "renewInterval": 500},
		"reporter": {"type": "MyApp/Reporter"}`)

	out, errOut, code := runLeasehold(t, "status", "--config", cfg)
	if code != 3 || !strings.Contains(out, "app-lease") || !strings.Contains(out, "missing") {
		t.Fatalf("status --config of the application's configuration, before any run: exit %d, want 3 (missing)\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	p := w.start("a", []string{"LEASEHOLD_TEST_CMD=record"},
		append([]string{"run", "--config", cfg, "--instance-id", "app-1", "--log-format", "json", "--"}, helperCmd()...)...)
	ev, _ := w.waitCmd(30*time.Second, "CMD-START", nil)
	if ev.lease != "app-lease" || ev.id != "app-1" || ev.term == 0 {
		t.Errorf("CMD environment: lease %q instance %q term %d, want app-lease, app-1, a term", ev.lease, ev.id, ev.term)
	}
	out, errOut, code = runLeasehold(t, "status", "--config", cfg)
	if code != 0 || !strings.Contains(out, "app-1") {
		t.Errorf("status --config while app-1 leads: exit %d, want 0 and the holder app-1\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if st := statusJSON(t, "file://"+registry, "app-lease"); st.Holder != "app-1" {
		t.Errorf("the lease in the configuration's Registry: holder %q, want app-1", st.Holder)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := w.waitExit(p, 10*time.Second); code != 0 {
		t.Errorf("run --config exited %d after SIGTERM, want 0", code)
	}
}

// The services the command uses, and those of the types it links, are still checked: an
// unknown parameter is an error naming it; a configuration without a cluster service is an
// error naming the file.
func TestConfigOfTheApplicationBadInput(t *testing.T) {
	dir := t.TempDir()
	registry := `"Registry": {"type": "Webda/FileStore", "path": "` + filepath.Join(dir, "r.json") + `"}`
	poller := `"poller": {"type": "MyApp/Poller", "interval": "10s"}`
	cluster := `"cluster": {"type": "StoreClusterService", "leaseDuration": 2000, "renewInterval": 500}`
	for _, tc := range []struct {
		name, services string
		want           []string // in the first line
	}{
		{"cluster parameter", poller + `, ` + registry + `, "cluster": {"type": "StoreClusterService", "leaseDurations": 2000}`,
			[]string{`"cluster"`, "leaseDurations"}},
		{"registry parameter", poller + `, "Registry": {"type": "Webda/FileStore", "paht": "/tmp/x.json"}, ` + cluster,
			[]string{`"Registry"`, "paht"}},
		{"linked type's parameter", poller + `, ` + registry + `, "cache": {"type": "Webda/MemoryStore", "size": 3}, ` + cluster,
			[]string{`"cache"`, "size"}},
		{"registry of an unknown type", poller + `, "Registry": {"type": "MyApp/Store"}, ` + cluster,
			[]string{`"Registry"`, `unknown type "MyApp/Store"`}},
		{"no cluster service", poller + `, ` + registry + `, "elect": {"type": "MyApp/Cluster"}`,
			[]string{"no cluster service", "Webda/StoreClusterService"}},
	} {
		cfg := writeConfig(t, dir, strings.ReplaceAll(tc.name, " ", "-")+".json", tc.services)
		for _, args := range [][]string{{"status", "--config", cfg}, {"run", "--config", cfg, "--", "true"}} {
			stdout, stderr, code := runLeasehold(t, args...)
			first, _, _ := strings.Cut(stderr, "\n")
			if code != 2 {
				t.Errorf("%s: %s: exit %d, want 2\nstdout:\n%s\nstderr:\n%s", tc.name, args[0], code, stdout, stderr)
				continue
			}
			for _, want := range append(tc.want, cfg) {
				if !strings.Contains(first, want) {
					t.Errorf("%s: %s: first line %q, want it to contain %q", tc.name, args[0], first, want)
				}
			}
		}
	}
}
