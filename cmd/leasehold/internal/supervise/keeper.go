//go:build unix

package supervise

// The keeper is a small process between leasehold run (the supervisor) and CMD: the same
// binary, run again with KeeperArg as its first argument (main dispatches it to KeeperMain
// before anything else). It starts CMD, and from then on answers for CMD's whole process tree:
//
//   - On Linux it is a child subreaper: every process CMD starts, however it detaches (double
//     fork, setsid, a new process group), stays its descendant or is reparented to it, so it
//     finds them all under /proc/<pid>/task/*/children and reaps them. Elsewhere the tree it
//     can reach is CMD's process group.
//   - When the supervisor dies, by any means (SIGKILL, OOM, panic), it notices at once (the end
//     of its control pipe; on Linux also a parent-death signal; everywhere, getppid polled)
//     and SIGKILLs the tree, repeating until nothing is left.
//   - It signals the tree when the supervisor asks, and exits only once CMD has exited and no
//     process of the tree is left, so that the supervisor, which waits for it, reports CMD
//     stopped (and releases the lease) only then.
//
// Its file descriptors 3 and 4 are pipes to the supervisor. On 3 it first reads startByte, the
// supervisor's go-ahead to start CMD (the end of the pipe instead: CMD is not to start, the
// keeper exits 0), then one byte per request: a signal number, with treeBit set to send it to the whole tree (else to CMD's
// process group only, as for the signals leasehold relays); SIGKILL to the tree also means
// "repeat until the tree is empty". On 4 it writes lines:
//
//	pid <pid>            CMD started (its pid is also its process group)
//	error <message>      CMD could not be started; the keeper exits 127
//	exit <status> <n>    CMD exited with status (128+N for signal N); n processes of its tree
//	                     remained at that moment
//
// then it exits with CMD's status once the tree is empty.

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// The keeper's descriptors, from the supervisor's ExtraFiles.
const (
	keeperControlFD = 3
	keeperStatusFD  = 4
)

// treeBit in a control byte sends the signal to the whole tree.
const treeBit = 0x80

// startByte is the supervisor's go-ahead to start CMD, the first byte on the control pipe.
const startByte = 's'

// readStart waits for the supervisor's go-ahead on control: false at the end of the pipe (or
// any other byte), when CMD must not start.
func readStart(control *os.File, b []byte) bool {
	for {
		n, err := control.Read(b)
		if n == 1 {
			return b[0] == startByte
		}
		if err != nil {
			return false
		}
	}
}

// KeeperMain runs the keeper for the command line "-- CMD [ARGS...]" (the arguments after
// KeeperArg) and returns its exit status.
func KeeperMain(args []string) int {
	if len(args) < 2 || args[0] != "--" || !isPipe(keeperControlFD) || !isPipe(keeperStatusFD) {
		fmt.Fprintf(os.Stderr, "leasehold: %s is leasehold run's own helper, not a command\n", KeeperArg)
		return statusUsage
	}
	argv := args[1:]
	// CMD must not inherit the pipes: the supervisor's end of file on the status pipe is the
	// keeper's death, whatever CMD's tree does.
	syscall.CloseOnExec(keeperControlFD)
	syscall.CloseOnExec(keeperStatusFD)
	control := os.NewFile(keeperControlFD, "leasehold-control")
	status := bufio.NewWriter(os.NewFile(keeperStatusFD, "leasehold-status"))
	report := func(format string, a ...any) {
		fmt.Fprintf(status, format+"\n", a...)
		_ = status.Flush() // fails once the supervisor is gone: nobody to tell
	}

	// Handled, not ignored, so that CMD starts with the default dispositions. SIGTERM is the
	// parent-death signal (see keeperAttr); SIGPIPE must not kill the keeper when leasehold's
	// output is a pipe closed early.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGPIPE)
	parent := os.Getppid()
	k := &keeper{reaper: setSubreaper() == nil}

	// CMD starts only once the supervisor says so (C1): it checks then that the leadership
	// CMD is for has not ended meanwhile. The end of the pipe instead: it has, or the
	// supervisor is gone; CMD never starts.
	if b := make([]byte, 1); !readStart(control, b) {
		return statusOK
	}

	// CMD's parent-death signal follows the thread that forks it: this goroutine keeps its
	// thread for the keeper's whole life.
	runtime.LockOSThread()
	path, err := exec.LookPath(argv[0])
	if err == nil {
		k.pid, err = syscall.ForkExec(path, argv, &syscall.ProcAttr{
			Env: os.Environ(), Files: []uintptr{0, 1, 2}, Sys: cmdAttr(),
		})
	}
	if err != nil {
		report("error %s", strings.ReplaceAll(err.Error(), "\n", " "))
		return 127
	}
	report("pid %d", k.pid)
	requests, parentGone := readRequests(control)
	return k.keep(requests, parentGone, sigs, parent, report)
}

// readRequests reads the supervisor's signal requests from the control pipe. parentGone is
// closed at its end of file: the supervisor is gone.
func readRequests(control *os.File) (requests <-chan byte, parentGone <-chan struct{}) {
	reqs := make(chan byte, 16)
	gone := make(chan struct{})
	go func() {
		b := make([]byte, 1)
		for {
			n, err := control.Read(b)
			if n == 1 {
				reqs <- b[0]
			}
			if err != nil {
				close(gone)
				return
			}
		}
	}()
	return reqs, gone
}

// keep reaps and signals CMD's tree until CMD has exited and the tree is empty, and returns
// CMD's status. Once the supervisor is gone, or asks for SIGKILL, the tree gets SIGKILL until
// it is empty.
func (k *keeper) keep(requests <-chan byte, parentGone <-chan struct{}, sigs <-chan os.Signal, parent int, report func(string, ...any)) int {
	killing := false
	timer := time.NewTimer(time.Hour)
	for {
		k.reap()
		if k.exited && !k.reported {
			report("exit %d %d", k.status, k.remaining())
			k.reported = true
		}
		if k.exited && k.empty() {
			return k.status
		}
		if killing {
			k.signal(syscall.SIGKILL, true)
		}
		wait := 100 * time.Millisecond // getppid, as a last resort
		switch {
		case killing:
			wait = 2 * time.Millisecond
		case k.exited && !k.reaper:
			wait = 5 * time.Millisecond // the group's processes are not children: poll them
		}
		timer.Reset(wait)
		select {
		case b := <-requests:
			sig := syscall.Signal(b &^ treeBit)
			k.signal(sig, b&treeBit != 0)
			if sig == syscall.SIGKILL {
				killing = true
			}
		case <-parentGone:
			parentGone = nil
			killing = true
		case sig := <-sigs:
			// A signal other than SIGCHLD is the parent-death signal only once the parent is
			// gone; otherwise it is not for the keeper (the supervisor relays what CMD must get).
			if sig != syscall.SIGCHLD && os.Getppid() != parent {
				killing = true
			}
		case <-timer.C:
			if os.Getppid() != parent {
				killing = true
			}
		}
	}
}

// keeper is the state of the keeper's loop.
type keeper struct {
	reaper bool // a child subreaper: the whole tree is its descendants
	pid    int  // CMD's pid and process group

	exited     bool // CMD has exited and was reaped
	status     int  // CMD's status, once exited
	reported   bool // the exit line was written
	noChildren bool // the last wait found no child left
}

// reap reaps every child that has exited: CMD, and on Linux the orphans of its tree.
func (k *keeper) reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil { // ECHILD
			k.noChildren = true
			return
		}
		if pid == 0 {
			k.noChildren = false
			return
		}
		if pid == k.pid {
			k.exited, k.status = true, waitStatus(ws)
		}
	}
}

// empty reports whether no process of the tree is left: as a subreaper, when the keeper has no
// child left (every process of the tree descends from one of its children); elsewhere, when
// CMD's group is empty.
func (k *keeper) empty() bool {
	if k.reaper {
		return k.noChildren
	}
	return !groupAlive(k.pid)
}

// remaining counts the processes of the tree still running (or not yet reaped).
func (k *keeper) remaining() int {
	if k.reaper {
		return len(descendants(os.Getpid(), nil))
	}
	if groupAlive(k.pid) {
		return 1 // at least
	}
	return 0
}

// signal sends sig to CMD's process group and, for the tree, to every descendant of the
// keeper that is not in that group (it left it: setsid, setpgid, a double fork), so that each
// process of the tree gets sig once: a shell's trap runs once, and a program that reads a
// second SIGTERM as "quit now" gets to shut down gracefully. Once CMD has been reaped, its
// group may be empty and its number another process's: a subreaper then reaches the group's
// processes among its descendants instead, each of them once too.
func (k *keeper) signal(sig syscall.Signal, tree bool) {
	viaGroup := !k.exited || !k.reaper
	if viaGroup {
		_ = syscall.Kill(-k.pid, sig)
		if !tree {
			return
		}
	}
	for _, pid := range descendants(os.Getpid(), nil) {
		pgid, err := syscall.Getpgid(pid)
		inGroup := err == nil && pgid == k.pid
		if viaGroup && inGroup || !viaGroup && !tree && !inGroup {
			continue // signalled through the group already, or not asked for
		}
		if err != nil && viaGroup {
			continue // gone meanwhile
		}
		_ = syscall.Kill(pid, sig)
	}
}

func isPipe(fd int) bool {
	var st syscall.Stat_t
	return syscall.Fstat(fd, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFIFO
}
