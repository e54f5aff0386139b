//go:build unix

package health

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readPid reads the pid a script wrote for its background child.
func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		t.Fatalf("pid file holds %q", b)
	}
	return pid
}

// zombie reports whether pid has exited and waits only for its parent to reap it (Linux's
// /proc; elsewhere it reports false). A grandchild orphaned by the kill is reaped by whatever
// process adopts it, which may be slow to do so in a container.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && strings.HasPrefix(string(b[i+1:]), " Z")
}

// waitGone polls until pid has exited: no such process, or a zombie; the kill is immediate
// but the reaping by the new parent is not.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := syscall.Kill(pid, 0)
		if errors.Is(err, syscall.ESRCH) || zombie(pid) {
			return
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("grandchild %d still exists after the check returned (kill(pid,0): %v)", pid, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestShellTimeoutKillsGroup(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	// The script writes the pid to a temp name and renames it so the file
	// is complete once it exists; the check's timeout is the only thing
	// that ends the script.
	script := `sleep 1000 & echo $! > ` + pidfile + `.tmp && mv ` + pidfile + `.tmp ` + pidfile + `; exec sleep 1000`
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err := Shell(script)(ctx)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Fatalf("err = %v, want one naming the timeout", err)
	}
	waitGone(t, readPid(t, pidfile))
}

func TestShellCancelIsNamed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Shell("exit 0")(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestShellHealthyLeavesNothingBehind(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	script := `sleep 1000 & echo $! > ` + pidfile + `; exit 0`
	if err := Shell(script)(context.Background()); err != nil {
		t.Fatalf("err = %v, want nil", err)
	}
	waitGone(t, readPid(t, pidfile))
}

func TestShellFailureNamesStatusAndLastLine(t *testing.T) {
	err := Shell("echo first; echo second >&2; exit 7")(context.Background())
	if err == nil {
		t.Fatal("err = nil for exit 7")
	}
	for _, want := range []string{`sh -c`, "exit status 7", `"second"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %q, want it to contain %q", err, want)
		}
	}
	if strings.Contains(err.Error(), `"first`) {
		t.Errorf("err = %q quotes an earlier line than the last", err)
	}
}

func TestOutputIsBounded(t *testing.T) {
	err := Shell("head -c 5000 /dev/zero | tr '\\0' x; exit 1")(context.Background())
	if err == nil {
		t.Fatal("err = nil for exit 1")
	}
	if n := strings.Count(err.Error(), "x"); n > maxLine+10 {
		t.Fatalf("error quotes %d bytes of output, want at most %d", n, maxLine)
	}
}

func TestCommand(t *testing.T) {
	if err := Command("true")(context.Background()); err != nil {
		t.Fatalf("true: %v", err)
	}
	err := Command("false")(context.Background())
	if err == nil || !strings.Contains(err.Error(), "false") || !strings.Contains(err.Error(), "exit status 1") {
		t.Fatalf("false: err = %v", err)
	}
	err = Command("/nonexistent/program")(context.Background())
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/program") {
		t.Fatalf("missing program: err = %v", err)
	}
}

func TestEmptyIsAnError(t *testing.T) {
	if err := Shell(" ")(context.Background()); err == nil || !strings.Contains(err.Error(), "script") {
		t.Errorf("Shell(\" \"): err = %v", err)
	}
	if err := Command("")(context.Background()); err == nil || !strings.Contains(err.Error(), "name") {
		t.Errorf("Command(\"\"): err = %v", err)
	}
}

func TestURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/sick" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	if err := URL(srv.URL + "/ok")(ctx); err != nil {
		t.Errorf("200: err = %v", err)
	}
	err := URL(srv.URL + "/sick")(ctx)
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), srv.URL+"/sick") {
		t.Errorf("503: err = %v", err)
	}
}

func TestURLUnreachableMasksPassword(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.Listener.Addr().String()
	srv.Close()
	err := URL("http://admin:hunter2@" + addr + "/health")(context.Background())
	if err == nil {
		t.Fatal("err = nil for a closed port")
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err = %q shows the password", err)
	}
	if !strings.Contains(err.Error(), "admin:xxxxx@"+addr) {
		t.Fatalf("err = %q, want it to name the masked URL", err)
	}
}

func TestURLStatusMasksPassword(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	u := strings.Replace(srv.URL, "http://", "http://admin:hunter2@", 1)
	err := URL(u)(context.Background())
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "500") {
		t.Fatalf("err = %v", err)
	}
}

func TestURLTimeoutIsNamed(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := URL(srv.URL)(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), srv.URL) {
		t.Fatalf("err = %v", err)
	}
}

func TestBadURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ftp://u:secret@example.com/x", "scheme"},
		{"http://u:secret@exa mple.com/%zz", "parse"},
		{"http:///nohost", "host"},
	} {
		err := URL(tc.in)(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("URL(%q): err = %v, want one about %s without the password", tc.in, err, tc.want)
		}
	}
}
