package kubetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// finish writes what a build that ended writes: the binaries when it succeeded, then the
// pending file, renamed into place as scripts/test does.
func finish(t *testing.T, dir, rc string) {
	t.Helper()
	if rc == "0" {
		for _, b := range []string{"etcd", "kube-apiserver"} {
			if err := os.WriteFile(filepath.Join(dir, b), nil, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	tmp := filepath.Join(dir, "rc.tmp")
	if err := os.WriteFile(tmp, []byte(rc+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "rc")); err != nil {
		t.Fatal(err)
	}
}

// pending returns an empty assets directory, named by AssetsEnv, whose build is pending: its
// file will be dir/rc.
func pending(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv(AssetsEnv, dir)
	t.Setenv(PendingEnv, filepath.Join(dir, "rc"))
	return dir
}

type found struct {
	dir string
	err error
}

func findAsync() <-chan found {
	ch := make(chan found, 1)
	go func() {
		dir, err := FindBinaries()
		ch <- found{dir, err}
	}()
	return ch
}

// The binaries appear only once FindBinaries is already looking: it succeeds only if it
// waited for the pending build.
func TestFindBinariesWaitsForThePendingBuild(t *testing.T) {
	dir := pending(t)
	ch := findAsync()
	finish(t, dir, "0")
	got := <-ch
	if got.err != nil || got.dir != dir {
		t.Fatalf("FindBinaries = %q, %v; want %q after the build", got.dir, got.err, dir)
	}
}

func TestFindBinariesReportsAFailedBuild(t *testing.T) {
	dir := pending(t)
	ch := findAsync()
	finish(t, dir, "1")
	got := <-ch
	if got.err == nil || !strings.Contains(got.err.Error(), "build of kube-apiserver failed") {
		t.Fatalf("FindBinaries = %q, %v; want the failed build", got.dir, got.err)
	}
}

// Without a pending build, missing binaries are an error at once, naming the variable.
func TestFindBinariesWithoutPendingBuild(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(AssetsEnv, dir)
	t.Setenv(PendingEnv, "")
	if _, err := FindBinaries(); err == nil || !strings.Contains(err.Error(), AssetsEnv) {
		t.Fatalf("FindBinaries without the binaries: %v; want an error naming %s", err, AssetsEnv)
	}
}
