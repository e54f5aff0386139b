//go:build unix

package file

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Permission errors name the file at fault, and a refused write leaves the data file as it
// was (T6). Root ignores file permissions: as root, the test runs itself again as the user
// nobody when the system allows it, and skips otherwise.
func TestPermissionErrors(t *testing.T) {
	if os.Geteuid() == 0 {
		rerunAsNobody(t)
		return
	}
	ctx := t.Context()
	// chmod changes a directory's permissions for the test; the cleanup restores them so that
	// the test's directory can be removed.
	chmod := func(t *testing.T, path string, mode fs.FileMode) {
		t.Helper()
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(path, 0o755) })
	}
	wantPermission := func(t *testing.T, err error, names string) {
		t.Helper()
		if !errors.Is(err, fs.ErrPermission) {
			t.Fatalf("error %v, want fs.ErrPermission", err)
		}
		if !strings.Contains(err.Error(), names) {
			t.Errorf("error %q does not name %s", err, names)
		}
	}

	t.Run("directory not writable at Open", func(t *testing.T) {
		path := newPath(t)
		chmod(t, filepath.Dir(path), 0o555)
		s, err := Open(path)
		if err == nil {
			s.Close()
			t.Fatal("Open succeeded")
		}
		wantPermission(t, err, path+".lock")
	})
	t.Run("data file not readable", func(t *testing.T) {
		path := newPath(t)
		if err := os.WriteFile(path, []byte(goodFile), 0o000); err != nil {
			t.Fatal(err)
		}
		s, err := Open(path)
		if err == nil {
			s.Close()
			t.Fatal("Open succeeded")
		}
		wantPermission(t, err, path)
	})
	t.Run("directory not writable at write", func(t *testing.T) {
		path := newPath(t)
		s := mustOpen(t, path)
		if err := s.Create(ctx, "a", map[string]any{"n": 1}); err != nil {
			t.Fatal(err)
		}
		before := readFile(t, path)
		chmod(t, filepath.Dir(path), 0o555)
		if doc, err := s.Get(ctx, "a"); err != nil || doc["n"] != 1.0 {
			t.Fatalf("Get: %v, %v", doc, err)
		}
		err := s.Create(ctx, "b", map[string]any{})
		wantPermission(t, err, filepath.Dir(path))
		if !strings.Contains(err.Error(), `"b"`) {
			t.Errorf("error %q does not name the key", err)
		}
		wantUnchanged(t, path, before)
		if err := os.Chmod(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := s.Create(ctx, "b", map[string]any{}); err != nil {
			t.Fatalf("Create once the directory is writable: %v", err)
		}
	})
	t.Run("lock file read-only", func(t *testing.T) {
		path := newPath(t)
		w := mustOpen(t, path)
		if err := w.Create(ctx, "a", map[string]any{"n": 1}); err != nil {
			t.Fatal(err)
		}
		before := readFile(t, path)
		chmod(t, path+".lock", 0o444)
		s := mustOpen(t, path)
		if doc, err := s.Get(ctx, "a"); err != nil || doc["n"] != 1.0 {
			t.Fatalf("Get through a read-only lock file: %v, %v", doc, err)
		}
		err := s.Patch(ctx, "a", map[string]any{"n": 2}, nil)
		wantPermission(t, err, path+".lock")
		wantUnchanged(t, path, before)
		if tmp := temps(t, path); len(tmp) != 0 {
			t.Errorf("temporary files left: %v", tmp)
		}
	})
}

// rerunAsNobody runs TestPermissionErrors in a copy of the test binary as the user nobody
// (65534), and fails when it fails there.
func rerunAsNobody(t *testing.T) {
	dir, err := os.MkdirTemp("", "filestore-permission-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The test binary's own directory is private to root: copy it where nobody can run it.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "file.test")
	copyFile(t, os.Args[0], bin)
	cmd := exec.Command(bin, "-test.run=^TestPermissionErrors$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+os.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Skipf("running as root, and cannot run as nobody (%v): permission errors not tested", err)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestPermissionErrors") {
		t.Fatalf("TestPermissionErrors as nobody: %v\n%s", err, out)
	}
	t.Logf("ran as nobody (root ignores permissions):\n%s", out)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
