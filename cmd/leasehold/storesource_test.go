//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runLeaseholdEnv is runLeasehold with env added to the environment.
func runLeaseholdEnv(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// storeLine is the "store:" line of status's or repair's output.
func storeLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, "store:"); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// The store's URL comes from --store, else the file of --store-file (its trailing newline
// ignored), else $LEASEHOLD_STORE, else the default store; --config ignores the environment.
func TestStoreSources(t *testing.T) {
	dir := t.TempDir()
	flagURL := "file://" + filepath.Join(dir, "flag.json")
	fileURL := "file://" + filepath.Join(dir, "file.json")
	envURL := "file://" + filepath.Join(dir, "env.json")
	defaultURL := "file://" + filepath.Join(dir, "state", "leasehold", "registry.json")
	storeFile := filepath.Join(dir, "store-url")
	if err := os.WriteFile(storeFile, []byte(fileURL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgRegistry := filepath.Join(dir, "cfg.json")
	cfg := writeConfig(t, dir, "app.json", `"Registry": {"type": "Webda/FileStore", "path": "`+cfgRegistry+`"},
		"cluster": {"type": "StoreClusterService"}`)
	env := []string{"XDG_STATE_HOME=" + filepath.Join(dir, "state")}
	withEnv := append(env, "LEASEHOLD_STORE="+envURL)
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string // the store status reads
	}{
		{"--store first", withEnv, []string{"--store", flagURL, "--store-file", storeFile}, flagURL},
		{"then --store-file", withEnv, []string{"--store-file", storeFile}, fileURL},
		{"then LEASEHOLD_STORE", withEnv, nil, envURL},
		{"then the default", env, nil, defaultURL},
		{"--config ignores LEASEHOLD_STORE", withEnv, []string{"--config", cfg}, cfg},
	} {
		for _, cmd := range []string{"status", "repair"} {
			stdout, stderr, code := runLeaseholdEnv(t, tc.env, append([]string{cmd, "--lease", "jobs"}, tc.args...)...)
			wantCode := 3
			if cmd == "repair" {
				wantCode = 0
			}
			if code != wantCode || storeLine(stdout) != tc.want {
				t.Errorf("%s: %s: exit %d, store %q; want exit %d and store %q\nstdout:\n%s\nstderr:\n%s",
					tc.name, cmd, code, storeLine(stdout), wantCode, tc.want, stdout, stderr)
			}
		}
	}

	// run reads them too: its CMD runs over the store of the file, which status then shows
	// released.
	p := newWorld(t).start("run", []string{"LEASEHOLD_TEST_CMD=exit"}, append([]string{"run", "--store-file", storeFile,
		"--lease", "jobs", "--lease-duration", testLs, "--renew-interval", testRs, "--"}, helperCmd()...)...)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("run --store-file has not exited within 30s")
	}
	if st := statusJSON(t, fileURL, "jobs"); p.code != 0 || st.State != "released" || st.Term == 0 {
		t.Errorf("run --store-file: exit %d, then the lease in the file's store is %+v; want exit 0 and a released lease with a term", p.code, st)
	}
}

// A URL from the file or the environment that is wrong is bad input naming where it came
// from, without its password; a missing or empty file too.
func TestStoreSourcesBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	badURL := write("bad", "redis://user:s3cret-pw@[::1\n")
	unknown := write("unknown", "foo://user:s3cret-pw@host/x\n")
	empty := write("empty", "\n")
	blank := write("blank", "  \t\n\n")
	cfg := func(name, registry string) string {
		return write(name, `{"services": {"Registry": `+registry+`, "cluster": {"type": "StoreClusterService"}}}`)
	}
	cfgURL := cfg("url.json", `{"type": "Webda/RedisStore", "url": ""}`)
	cfgEnv := cfg("env.json", `{"type": "Webda/RedisStore", "urlEnv": "LEASEHOLD_TEST_REGISTRY_URL"}`)
	cfgFile := cfg("file.json", `{"type": "Webda/RedisStore", "urlFile": "`+blank+`"}`)
	cfgPath := cfg("path.json", `{"type": "Webda/FileStore", "path": " "}`)
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"URL from the file", nil, []string{"--store-file", badURL}, []string{"--store-file " + badURL, "invalid URL"}},
		{"scheme from the file", nil, []string{"--store-file", unknown}, []string{"--store-file " + unknown, `unknown scheme "foo"`, "xxxxx"}},
		{"URL from the environment", []string{"LEASEHOLD_STORE=redis://user:s3cret-pw@[::1"}, nil, []string{"LEASEHOLD_STORE", "invalid URL"}},
		{"missing file", nil, []string{"--store-file", filepath.Join(dir, "none")}, []string{"--store-file", filepath.Join(dir, "none")}},
		{"empty file", nil, []string{"--store-file", empty}, []string{"--store-file " + empty + " is empty"}},
		// A setting given empty is refused, never taken for the default store, local to the host
		// (every host would lead): only a setting absent altogether takes the default.
		{"blank file", nil, []string{"--store-file", blank}, []string{"--store-file " + blank + " is empty"}},
		{"empty --store", nil, []string{"--store", ""}, []string{"--store is empty"}},
		{"blank --store", nil, []string{"--store", " "}, []string{"--store is empty"}},
		{"empty --store beside LEASEHOLD_STORE", []string{"LEASEHOLD_STORE=file:///tmp/x.json"}, []string{"--store", ""}, []string{"--store is empty"}},
		{"empty --store-file", nil, []string{"--store-file", ""}, []string{"--store-file is empty"}},
		{"empty LEASEHOLD_STORE", []string{"LEASEHOLD_STORE="}, nil, []string{"LEASEHOLD_STORE is set but empty"}},
		{"blank LEASEHOLD_STORE", []string{"LEASEHOLD_STORE= "}, nil, []string{"LEASEHOLD_STORE is set but empty"}},
		{"empty --config", nil, []string{"--config", ""}, []string{"--config is empty"}},
		{"config with an empty url", nil, []string{"--config", cfgURL}, []string{"--config " + cfgURL, `"Registry"`, `parameter "url" is empty`}},
		{"config with an empty urlEnv variable", []string{"LEASEHOLD_TEST_REGISTRY_URL="}, []string{"--config", cfgEnv}, []string{"--config " + cfgEnv, "LEASEHOLD_TEST_REGISTRY_URL is empty"}},
		{"config with a blank urlFile", nil, []string{"--config", cfgFile}, []string{"--config " + cfgFile, `"urlFile"`, blank + " is empty"}},
		{"config with a blank path", nil, []string{"--config", cfgPath}, []string{"--config " + cfgPath, `parameter "path" is empty`}},
		{"--store-file and --config", nil, []string{"--store-file", empty, "--config", empty}, []string{"--store-file and --config"}},
	} {
		for _, cmd := range []string{"status", "repair", "run"} {
			args := append([]string{cmd}, tc.args...)
			if cmd == "run" {
				args = append(args, "--", "true")
			}
			stdout, stderr, code := runLeaseholdEnv(t, tc.env, args...)
			first, _, _ := strings.Cut(stderr, "\n")
			if code != 2 || !isUsageError(stderr, "leasehold "+cmd) || stdout != "" {
				t.Errorf("%s: %s: exit %d, want 2, one line and a pointer to --help\nstdout:\n%s\nstderr:\n%s", tc.name, cmd, code, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(first, w) {
					t.Errorf("%s: %s: first line %q does not name %q", tc.name, cmd, first, w)
				}
			}
			if strings.Contains(stderr, "s3cret-pw") {
				t.Errorf("%s: %s: the password shows:\n%s", tc.name, cmd, stderr)
			}
		}
	}

	// A store that fails is exit 1, without the password either.
	file := write("down", "postgres://nobody:s3cret-pw@127.0.0.1:1/x\n")
	_, stderr, code := runLeasehold(t, "status", "--store-file", file)
	checkFailure(t, "status --store-file of a store that is down", code, "", stderr, "postgres://nobody:xxxxx@127.0.0.1:1/x", "connection refused")
	if strings.Contains(stderr, "s3cret-pw") {
		t.Errorf("the password shows:\n%s", stderr)
	}
}
