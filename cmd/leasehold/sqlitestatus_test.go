//go:build unix

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// status over SQLite only reads: it creates neither the database file nor a table, and
// changes nothing in a database that exists (it opens it with mode=ro).
func TestStatusCreatesNothingSQLite(t *testing.T) {
	w := newWorld(t)
	path := filepath.Join(w.dir, "x.db")
	url := "sqlite://" + path
	out, errOut, code := runLeasehold(t, "status", "--store", url, "--lease", "jobs")
	if code != 3 || !strings.Contains(out, "missing") {
		t.Errorf("status of a SQLite file nobody wrote: exit %d, want 3 (missing)\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("status created %s (%v)", path, err)
	}
	if _, errOut, code := runLeasehold(t, "repair", "--store", url, "--lease", "jobs"); code != 0 {
		t.Errorf("repair of a SQLite file nobody wrote: exit %d, want 0 (nothing to repair)\n%s", code, errOut)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("repair with nothing to repair created %s (%v)", path, err)
	}

	// A database written by run, nobody running: status reads its lease, and neither the lease
	// of a table nobody created nor that of a missing lease changes the file.
	p := w.start("run", []string{"LEASEHOLD_TEST_CMD=exit"}, append([]string{"run", "--store", url, "--lease", "jobs",
		"--lease-duration", testLs, "--renew-interval", testRs, "--"}, helperCmd()...)...)
	if code := w.waitExit(p, 30*time.Second); code != 0 {
		t.Fatalf("run over SQLite exited %d", code)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if st := statusJSON(t, url, "jobs"); st.State != "released" || st.Term == 0 {
		t.Errorf("status over SQLite after run: %+v, want released, with a term", st)
	}
	for _, u := range []string{url + "?table=other", url} {
		if out, errOut, code := runLeasehold(t, "status", "--store", u, "--lease", "nobody"); code != 3 || !strings.Contains(out, "missing") {
			t.Errorf("status --store %s of a missing lease: exit %d, want 3 (missing)\nstdout:\n%s\nstderr:\n%s", u, code, out, errOut)
		}
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(before, after) {
		t.Errorf("status changed the database file (%v)", err)
	}

	// A database in a directory that does not exist is more likely a mistyped path: an error.
	_, errOut, code = runLeasehold(t, "status", "--store", "sqlite://"+filepath.Join(w.dir, "nowhere", "x.db"))
	checkFailure(t, "status of a SQLite file in a missing directory", code, "", errOut, "nowhere")
}

// A SQLite file that does not exist is not opened by status, but its URL is still checked: an
// unknown parameter is refused, not read as a lease nobody took.
func TestStatusSQLiteBadParamWithoutFile(t *testing.T) {
	w := newWorld(t)
	path := filepath.Join(w.dir, "x.db")
	out, errOut, code := runLeasehold(t, "status", "--store", "sqlite://"+path+"?bogus=1", "--lease", "jobs")
	if code == 0 || code == 3 || !strings.Contains(errOut, `"bogus"`) {
		t.Errorf("status over a missing SQLite file with an unknown parameter: exit %d, want an error naming bogus\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("status created %s (%v)", path, err)
	}
}
