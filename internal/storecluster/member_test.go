//go:build linux

package storecluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// envOrphan makes this test binary a process that starts a member and dies without stopping
// it (TestMemberDiesWithItsStarter).
const envOrphan = "STORECLUSTER_TEST_ORPHAN"

func TestMain(m *testing.M) {
	if os.Getenv(envOrphan) == "1" {
		startAndDie()
	}
	os.Exit(m.Run())
}

// startAndDie starts a member, prints its process ID, and exits at once, its cleanups skipped
// as a panic or a test timeout skips them.
func startAndDie() {
	m := &Member{Name: "orphan", Command: func() *exec.Cmd { return exec.Command("sleep", "600") },
		Ready: func(context.Context) error { return nil }}
	if err := m.Start(context.Background()); err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	fmt.Println(m.cmd.Process.Pid)
	os.Exit(0)
}

// A server started by a process that dies without stopping it is killed with it.
func TestMemberDiesWithItsStarter(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envOrphan+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("starter: %v\n%s", err, out)
	}
	line, _, _ := strings.Cut(string(out), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("starter printed %q, not a process ID", out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the member (pid %d) outlived the process that started it by 30 s", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid runs: it exists and is no zombie (a container's init may leave an
// orphan unreaped).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	defer f.Close()
	stat, _ := bufio.NewReader(f).ReadString('\n')
	_, rest, _ := strings.Cut(stat, ") ")
	return !strings.HasPrefix(rest, "Z")
}
