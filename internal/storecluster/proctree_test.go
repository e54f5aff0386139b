//go:build linux

package storecluster_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/storecluster"
	"github.com/leasehold/leasehold/internal/testenv"
)

// A member's child in a session of its own (as PostgreSQL's backends are) is paused, resumed
// and killed with the member: a signal to the member's process group alone would miss it.
func TestMemberSignalsReachChildSessions(t *testing.T) {
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		testenv.Unavailable(t, "setsid not found: "+err.Error())
	}
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	m := &storecluster.Member{
		Name: "tree",
		Command: func() *exec.Cmd {
			return exec.Command("sh", "-c", setsid+` sleep 1000 & echo $! > `+pidFile+`; wait`)
		},
		Ready: func(context.Context) error {
			_, err := os.Stat(pidFile)
			return err
		},
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Kill() })
	var child string
	waitState(t, ctx, "the child's pid", func() bool {
		b, _ := os.ReadFile(pidFile)
		child = strings.TrimSpace(string(b))
		return child != ""
	})
	// stat returns field i of the child's /proc stat after its name (0: state, 2: group).
	stat := func(i int) string {
		b, err := os.ReadFile("/proc/" + child + "/stat")
		if err != nil {
			return "gone"
		}
		s := string(b)
		return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[i]
	}
	state := func() string { return stat(0) }
	waitState(t, ctx, "the child in a group of its own", func() bool { return stat(2) == child })
	if pid, _ := strconv.Atoi(child); pid == m.Pid() {
		t.Fatal("the child is the member's process itself")
	}
	if err := m.Pause(); err != nil {
		t.Fatal(err)
	}
	waitState(t, ctx, "the child stopped by Pause", func() bool { return state() == "T" })
	if err := m.Resume(); err != nil {
		t.Fatal(err)
	}
	waitState(t, ctx, "the child resumed by Resume", func() bool { return state() == "S" || state() == "R" })
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	waitState(t, ctx, "the child killed by Kill", func() bool { s := state(); return s == "gone" || s == "Z" })
}

func waitState(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
