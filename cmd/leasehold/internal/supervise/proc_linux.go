//go:build linux

package supervise

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// keeperAttr puts the keeper in a process group of its own (signals from the terminal go to
// leasehold, which relays what it must) and asks the kernel to send it SIGTERM when leasehold
// dies: the keeper catches it and SIGKILLs CMD's whole tree.
//
// The kernel sends the parent-death signal when the *thread* that forked the child exits, not
// the process (prctl(2), go.dev/issue/27505). The Go runtime ends a thread when a goroutine
// exits while locked to it, so the goroutine that starts the keeper locks its thread and keeps
// it locked until the keeper has exited (see startChild); the keeper does the same for CMD. A
// parent-death signal that comes while the parent still runs (its thread ended all the same)
// is recognized and ignored: the keeper checks getppid.
func keeperAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// cmdAttr puts CMD in a process group of its own and asks the kernel to SIGKILL it when the
// keeper dies.
func cmdAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// keeperPath is the executable the keeper is run from: this very binary, even if the file it
// was started from has since been replaced or removed.
func keeperPath() (string, error) { return "/proc/self/exe", nil }

// setSubreaper makes the calling process a child subreaper (PR_SET_CHILD_SUBREAPER): the
// processes orphaned below it (a double fork, a parent that exited first) are reparented to it
// instead of init, so it can still find, signal and reap them.
func setSubreaper() error { return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }

// descendants returns every descendant of pid (children, grandchildren, ...), from /proc. A
// child for which skip returns true is left out, with its own descendants. The answer is a
// snapshot: processes may be starting and ending meanwhile, so the callers that must end a
// tree repeat until nothing is left.
func descendants(pid int, skip func(child int) bool) []int {
	childrenOf := procChildren
	if !haveChildrenFiles() {
		childrenOf = scanChildren()
	}
	var out []int
	seen := map[int]bool{pid: true}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range childrenOf(p) {
			if seen[c] || (p == pid && skip != nil && skip(c)) {
				continue
			}
			seen[c] = true
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// procChildren reads the children of pid from /proc/<pid>/task/<tid>/children (each thread
// lists the children it forked).
func procChildren(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		data, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// haveChildrenFiles reports whether the kernel has /proc/<pid>/task/<tid>/children
// (CONFIG_PROC_CHILDREN, on in the common distributions' kernels).
var haveChildrenFiles = sync.OnceValue(func() bool {
	_, err := os.Stat(fmt.Sprintf("/proc/self/task/%d/children", unix.Gettid()))
	return err == nil || !errors.Is(err, fs.ErrNotExist)
})

// scanChildren reads the parent of every process from /proc/<pid>/stat, for kernels without
// the children files.
func scanChildren() func(int) []int {
	byParent := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			byParent[ppid] = append(byParent[ppid], pid)
		}
	}
	return func(pid int) []int { return byParent[pid] }
}
