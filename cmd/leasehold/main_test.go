//go:build unix

package main

// The tests are black-box: TestMain builds the leasehold binary once with `go build` and the
// tests run it as a user would, over file stores in temporary directories. The commands they
// give it to run are this test binary itself, re-executed in a helper mode (see cmdHelper):
// it prints one line when it starts and one when it stops, with its clock and its environment.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/supervise"
)

// bin is the leasehold binary under test.
var bin string

func TestMain(m *testing.M) {
	if mode := os.Getenv("LEASEHOLD_TEST_CMD"); mode != "" {
		os.Exit(cmdHelper(mode))
	}
	// The keeper of a supervisor run within the tests (it runs /proc/self/exe: this binary).
	if len(os.Args) > 1 && os.Args[1] == supervise.KeeperArg {
		os.Exit(supervise.KeeperMain(os.Args[2:]))
	}
	dir, err := os.MkdirTemp("", "leasehold-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "leasehold")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "go build of the leasehold command:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cmdHelper is the CMD the tests give to leasehold run:
//   - record: holds an exclusive flock on $LEASEHOLD_TEST_DIR/overlap.lock for its whole life
//     (the kernel drops it when the process dies, even by SIGKILL): if another CMD holds it,
//     two CMDs run at once and it prints CMD-OVERLAP and exits 99. It prints CMD-HUP on
//     SIGHUP, and exits 0 on SIGTERM or SIGINT, printing CMD-STOP with the signal.
//   - ignore-term: ignores SIGTERM (leasehold must SIGKILL it after the grace).
//   - exit: exits at once with status $LEASEHOLD_TEST_EXIT.
func cmdHelper(mode string) int {
	say := func(what string) {
		fmt.Printf("%s id=%s term=%s lease=%s pid=%d at=%d\n", what, os.Getenv("LEASEHOLD_INSTANCE_ID"),
			os.Getenv("LEASEHOLD_TERM"), os.Getenv("LEASEHOLD_LEASE"), os.Getpid(), time.Now().UnixNano())
	}
	if code, ok := treeHelper(mode); ok {
		return code
	}
	if code, ok := partitionHelper(mode); ok {
		return code
	}
	switch mode {
	case "record", "record-slot":
		sigs := make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		lock := "overlap.lock"
		if mode == "record-slot" { // --holders: one CMD per slot at a time
			lock = "overlap-" + os.Getenv("LEASEHOLD_SLOT") + ".lock"
			inner := say
			say = func(what string) { inner(what + " slot=" + os.Getenv("LEASEHOLD_SLOT")) }
		}
		f, err := os.OpenFile(filepath.Join(os.Getenv("LEASEHOLD_TEST_DIR"), lock), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			fmt.Println("CMD-ERROR", err)
			return 98
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			say("CMD-OVERLAP")
			return 99
		}
		say("CMD-START")
		for sig := range sigs {
			if sig == syscall.SIGHUP {
				say("CMD-HUP")
				continue
			}
			say("CMD-STOP signal=" + strings.ReplaceAll(sig.String(), " ", "_"))
			return 0
		}
		return 0
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		say("CMD-START")
		select {}
	case "print-store":
		fmt.Printf("CMD-STORE %q\n", os.Getenv("LEASEHOLD_STORE"))
		return 0
	case "exit":
		say("CMD-START")
		code, _ := strconv.Atoi(os.Getenv("LEASEHOLD_TEST_EXIT"))
		return code
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 97
}

// helperCmd is the CMD part of a leasehold run command line: this test binary in a mode.
func helperCmd() []string { return []string{os.Args[0]} }

// line is a line of output of a leasehold process.
type line struct {
	proc *proc
	text string
	at   time.Time // when the test read it
}

// world runs leasehold processes and collects their output lines, in order, in one channel.
type world struct {
	t     *testing.T
	dir   string
	lines chan line

	mu    sync.Mutex
	procs []*proc
}

type proc struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{} // closed once it has exited; then code holds its status
	code   int

	mu     sync.Mutex
	output []string
}

func newWorld(t *testing.T) *world {
	w := &world{t: t, dir: t.TempDir(), lines: make(chan line, 10000)}
	t.Cleanup(func() {
		w.mu.Lock()
		procs := append([]*proc(nil), w.procs...)
		w.mu.Unlock()
		for _, p := range procs {
			select {
			case <-p.exited:
			default:
				_ = p.cmd.Process.Kill()
				<-p.exited
			}
			if t.Failed() || os.Getenv("LEASEHOLD_TEST_LOGS") == "1" {
				p.mu.Lock()
				t.Logf("output of %s:\n%s", p.name, strings.Join(p.output, "\n"))
				p.mu.Unlock()
			}
		}
	})
	return w
}

// storeURL is the file store of the test.
func (w *world) storeURL() string { return "file://" + filepath.Join(w.dir, "registry.json") }

// start starts leasehold with args; the helper mode and extra environment go to its CMD.
func (w *world) start(name string, env []string, args ...string) *proc {
	w.t.Helper()
	cmd := exec.Command(bin, args...)
	// A -race binary sleeps 1s before exiting by default (atexit_sleep_ms): a CMD stopping at
	// once must exit at once.
	cmd.Env = append(os.Environ(), "LEASEHOLD_TEST_DIR="+w.dir, "GORACE=atexit_sleep_ms=0")
	cmd.Env = append(cmd.Env, env...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	p := &proc{name: name, cmd: cmd, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			p.mu.Lock()
			p.output = append(p.output, sc.Text())
			p.mu.Unlock()
			select {
			case w.lines <- line{proc: p, text: sc.Text(), at: time.Now()}:
			default: // nobody reads: the line stays in p.output
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		_ = cmd.Wait()
		pw.Close()
		<-scanned
		p.code = cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.code = 128 + int(ws.Signal())
		}
		close(p.exited)
	}()
	w.mu.Lock()
	w.procs = append(w.procs, p)
	w.mu.Unlock()
	return p
}

// waitLine waits for a line matching match, from any process, for at most timeout.
func (w *world) waitLine(timeout time.Duration, what string, match func(line) bool) line {
	w.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case l := <-w.lines:
			if strings.HasPrefix(l.text, "CMD-OVERLAP") {
				w.t.Fatalf("%s: two CMDs ran at once: %s", l.proc.name, l.text)
			}
			if match(l) {
				return l
			}
		case <-deadline.C:
			w.t.Fatalf("no %s within %v", what, timeout)
		}
	}
}

// waitExit waits for p to exit and returns its status.
func (w *world) waitExit(p *proc, timeout time.Duration) int {
	w.t.Helper()
	select {
	case <-p.exited:
		return p.code
	case <-time.After(timeout):
		w.t.Fatalf("%s has not exited within %v", p.name, timeout)
	}
	return 0
}

// cmdEvent is a parsed CMD-START or CMD-STOP line.
type cmdEvent struct {
	kind  string
	id    string
	term  uint64
	lease string
	pid   int
	at    time.Time // by the helper's clock
	slot  string    // LEASEHOLD_SLOT, for the record-slot helper
}

func parseCmdEvent(text string) (cmdEvent, bool) {
	f := strings.Fields(text)
	if len(f) == 0 || !strings.HasPrefix(f[0], "CMD-") {
		return cmdEvent{}, false
	}
	ev := cmdEvent{kind: f[0]}
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "id":
			ev.id = v
		case "term":
			ev.term, _ = strconv.ParseUint(v, 10, 64)
		case "lease":
			ev.lease = v
		case "pid":
			ev.pid, _ = strconv.Atoi(v)
		case "slot":
			ev.slot = v
		case "at":
			ns, _ := strconv.ParseInt(v, 10, 64)
			ev.at = time.Unix(0, ns)
		}
	}
	return ev, true
}

// waitCmd waits for a CMD-START or CMD-STOP line (kind) satisfying ok.
func (w *world) waitCmd(timeout time.Duration, kind string, ok func(cmdEvent) bool) (cmdEvent, *proc) {
	w.t.Helper()
	var ev cmdEvent
	l := w.waitLine(timeout, kind, func(l line) bool {
		e, isCmd := parseCmdEvent(l.text)
		if !isCmd || e.kind != kind || (ok != nil && !ok(e)) {
			return false
		}
		ev = e
		return true
	})
	return ev, l.proc
}

// logLine waits for a JSON log line whose msg is msg and returns its attributes.
func (w *world) logLine(timeout time.Duration, msg string) map[string]any {
	w.t.Helper()
	var attrs map[string]any
	w.waitLine(timeout, "log line "+strconv.Quote(msg), func(l line) bool {
		var m map[string]any
		if json.Unmarshal([]byte(l.text), &m) != nil || m["msg"] != msg {
			return false
		}
		attrs = m
		return true
	})
	return attrs
}

// processGone reports whether pid has exited (a zombie that nobody reaped has exited too: the
// test is not its parent). /proc is Linux's; elsewhere kill(pid, 0) is all there is.
func processGone(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) != nil
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

// waitGone waits until pid has exited. Nothing notifies the end of a process that is not
// one's child, so it polls, every few milliseconds, within a deadline.
func waitGone(t *testing.T, pid int, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !processGone(pid) {
		select {
		case <-ctx.Done():
			t.Fatalf("process %d still runs %v later", pid, timeout)
		case <-tick.C:
		}
	}
	return time.Since(start)
}
