//go:build unix

package main

// Tests of what leasehold run guarantees about CMD's whole process tree: children,
// grandchildren, double-fork daemons and processes that called setsid all end before another
// instance can lead, whether the supervisor is SIGKILLed, loses its lease, or its keeper is
// killed.
//
// The processes of a tree are helpers (this test binary, see treeHelper) that write a pid file
// named <instance>.<pid> in $LEASEHOLD_TEST_DIR/pids and then loop. A sampler reads those
// files every few milliseconds and records any moment at which processes of two instances
// run at once. The next leader's CMD is a marker helper that, as it starts, lists the pids of
// the files that are still alive: that list must be empty.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// treeHelper runs the helper modes of the process-tree tests; ok is false for other modes.
//   - worker: writes its pid file and loops (LEASEHOLD_TEST_SETSID=1: calls setsid first;
//     LEASEHOLD_TEST_IGNORE_TERM=1: ignores SIGTERM).
//   - daemon: a double fork: starts a child in a new session, which starts a worker and exits
//     at once (the worker is an orphan, outside CMD's group and session); then goes on as a
//     worker itself.
//   - marker: the next leader's CMD: lists the helpers of the pid files still running as it
//     starts, writes its own pid file, prints CMD-START with alive=<id:pid,...>, and runs until
//     SIGTERM or SIGINT.
//   - daemon-then-marker, worker-then-marker: daemon (or worker) the first time it runs in the
//     test's directory, marker after.
func treeHelper(mode string) (code int, ok bool) {
	switch mode {
	case "worker":
		return worker(), true
	case "daemon":
		return daemon(), true
	case "daemon-mid":
		d := exec.Command(os.Args[0])
		d.Env = append(os.Environ(), "LEASEHOLD_TEST_CMD=worker")
		d.Stdout, d.Stderr = os.Stdout, os.Stderr
		if err := d.Start(); err != nil {
			fmt.Println("WORKER-ERROR", err)
			return 95, true
		}
		return 0, true
	case "marker":
		return marker(), true
	case "daemon-then-marker", "worker-then-marker":
		f, err := os.OpenFile(filepath.Join(os.Getenv("LEASEHOLD_TEST_DIR"), "first-run"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return marker(), true
		}
		f.Close()
		if mode == "worker-then-marker" {
			return worker(), true
		}
		return daemon(), true
	}
	return 0, false
}

func worker() int {
	if os.Getenv("LEASEHOLD_TEST_SETSID") == "1" {
		if _, err := syscall.Setsid(); err != nil {
			fmt.Println("WORKER-ERROR setsid:", err)
			return 96
		}
	}
	if os.Getenv("LEASEHOLD_TEST_IGNORE_TERM") == "1" {
		signal.Ignore(syscall.SIGTERM)
	}
	if err := writePidFile(); err != nil {
		fmt.Println("WORKER-ERROR", err)
		return 96
	}
	fmt.Printf("WORKER-START id=%s pid=%d ppid=%d pgid=%d\n", os.Getenv("LEASEHOLD_INSTANCE_ID"), os.Getpid(), os.Getppid(), syscall.Getpgrp())
	for {
		time.Sleep(time.Hour)
	}
}

func daemon() int {
	mid := exec.Command(os.Args[0])
	mid.Env = append(os.Environ(), "LEASEHOLD_TEST_CMD=daemon-mid")
	mid.Stdout, mid.Stderr = os.Stdout, os.Stderr
	mid.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := mid.Run(); err != nil {
		fmt.Println("WORKER-ERROR", err)
		return 95
	}
	return worker()
}

func marker() int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	var alive []string
	for _, p := range readPidFiles(os.Getenv("LEASEHOLD_TEST_DIR")) {
		if p.pid != os.Getpid() && !processGone(p.pid) {
			alive = append(alive, p.id+":"+strconv.Itoa(p.pid))
		}
	}
	if err := writePidFile(); err != nil {
		fmt.Println("WORKER-ERROR", err)
		return 96
	}
	fmt.Printf("CMD-START id=%s term=%s lease=%s pid=%d at=%d alive=%s\n", os.Getenv("LEASEHOLD_INSTANCE_ID"),
		os.Getenv("LEASEHOLD_TERM"), os.Getenv("LEASEHOLD_LEASE"), os.Getpid(), time.Now().UnixNano(), strings.Join(alive, ","))
	sig := <-sigs
	fmt.Printf("CMD-STOP id=%s pid=%d signal=%s\n", os.Getenv("LEASEHOLD_INSTANCE_ID"), os.Getpid(), strings.ReplaceAll(sig.String(), " ", "_"))
	return 0
}

func writePidFile() error {
	name := fmt.Sprintf("%s.%d", os.Getenv("LEASEHOLD_INSTANCE_ID"), os.Getpid())
	f, err := os.Create(filepath.Join(os.Getenv("LEASEHOLD_TEST_DIR"), "pids", name))
	if err != nil {
		return err
	}
	return f.Close()
}

type pidFile struct {
	id  string
	pid int
}

func readPidFiles(testDir string) []pidFile {
	entries, _ := os.ReadDir(filepath.Join(testDir, "pids"))
	var out []pidFile
	for _, e := range entries {
		id, p, ok := strings.Cut(e.Name(), ".")
		if pid, err := strconv.Atoi(p); ok && err == nil {
			out = append(out, pidFile{id, pid})
		}
	}
	return out
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// treeShape is a CMD whose process tree the tests follow.
type treeShape struct {
	name    string
	cmd     []string
	env     []string
	workers int  // pid files its tree writes
	inGroup bool // the whole tree stays in CMD's process group
}

// wholeTree: on Linux the keeper reaches every descendant of CMD; elsewhere CMD's process
// group only, and the shapes that leave it are skipped.
const wholeTree = runtime.GOOS == "linux"

func (sh treeShape) skipUnreachable(t *testing.T) {
	if !sh.inGroup && !wholeTree {
		t.Skipf("on %s leasehold reaches CMD's process group only", runtime.GOOS)
	}
}

// killedKeeperShape is the shape of the keeper tests: the double-fork daemon where the whole
// tree is reached, else the grandchild.
func killedKeeperShape() treeShape {
	if wholeTree {
		return treeShapes()[1]
	}
	return treeShapes()[0]
}

func treeShapes() []treeShape {
	h := shellQuote(os.Args[0])
	setsid, setsidEnv := "setsid "+h, []string(nil)
	if _, err := exec.LookPath("setsid"); err != nil {
		setsid, setsidEnv = h, []string{"LEASEHOLD_TEST_SETSID=1"}
	}
	return []treeShape{
		// sh is CMD; the worker is its child, in CMD's process group.
		{"grandchild", []string{"/bin/sh", "-c", h + "; echo done"}, []string{"LEASEHOLD_TEST_CMD=worker"}, 1, true},
		// sh → daemon (a worker, in CMD's group) → a child in a new session, gone at once →
		// a worker, orphaned, in that session.
		{"double-fork-daemon", []string{"/bin/sh", "-c", h + "; echo done"}, []string{"LEASEHOLD_TEST_CMD=daemon"}, 2, false},
		// sh → a worker that called setsid: in a session and a group of its own, sh's child.
		{"setsid", []string{"/bin/sh", "-c", setsid + " & wait; echo done"}, append([]string{"LEASEHOLD_TEST_CMD=worker"}, setsidEnv...), 1, false},
	}
}

func treeArgs(storeURL, id string, cmd []string, extra ...string) []string {
	args := []string{"run", "--store", storeURL, "--lease", "jobs", "--lease-duration", testLs,
		"--renew-interval", testRs, "--instance-id", id, "--log-format", "json"}
	args = append(append(args, extra...), "--")
	return append(args, cmd...)
}

// treeWatch samples the helpers' pid files for the whole test.
type treeWatch struct {
	t       *testing.T
	w       *world
	stop    chan struct{}
	stopped chan struct{}

	mu       sync.Mutex
	samples  int
	overlaps []string // samples at which helpers of two instances ran
	known    []int    // every pid of a tree seen by the test, killed at cleanup if still there
}

func newTreeWatch(t *testing.T, w *world) *treeWatch {
	if err := os.Mkdir(filepath.Join(w.dir, "pids"), 0o700); err != nil {
		t.Fatal(err)
	}
	tw := &treeWatch{t: t, w: w, stop: make(chan struct{}), stopped: make(chan struct{})}
	go tw.sample()
	// Runs before the world's cleanup: a tree left behind (a failed test) keeps the output pipe
	// of its leasehold open, and the world would wait for it.
	t.Cleanup(func() {
		tw.stopSampling()
		pids := tw.known
		for _, p := range readPidFiles(w.dir) {
			pids = append(pids, p.pid)
		}
		for _, pid := range pids {
			if !processGone(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return tw
}

func (tw *treeWatch) sample() {
	defer close(tw.stopped)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tw.stop:
			return
		case <-tick.C:
		}
		byID := map[string][]int{}
		for _, p := range readPidFiles(tw.w.dir) {
			if !processGone(p.pid) {
				byID[p.id] = append(byID[p.id], p.pid)
			}
		}
		tw.mu.Lock()
		tw.samples++
		if len(byID) > 1 && len(tw.overlaps) < 5 {
			tw.overlaps = append(tw.overlaps, fmt.Sprintf("%s: %v", time.Now().Format("15:04:05.000"), byID))
		}
		tw.mu.Unlock()
	}
}

func (tw *treeWatch) stopSampling() {
	select {
	case <-tw.stop:
	default:
		close(tw.stop)
	}
	<-tw.stopped
}

// check stops the sampler and fails the test if two instances' helpers ever ran at once.
func (tw *treeWatch) check() {
	tw.t.Helper()
	time.Sleep(20 * time.Millisecond) // a few samples after the last pid file written
	tw.stopSampling()
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if len(tw.overlaps) > 0 {
		tw.t.Errorf("helpers of two instances ran at once (%d samples), e.g.:\n%s", tw.samples, strings.Join(tw.overlaps, "\n"))
	} else {
		tw.t.Logf("%d samples of the pid files, never two instances' helpers at once", tw.samples)
	}
}

// tree is the processes of one run of CMD that the test knows of.
type tree struct {
	cmd     int   // CMD's pid, from leasehold's log
	keeper  int   // the keeper's pid, from leasehold's log (0 if it logs none)
	workers []int // from the pid files
}

func (tr tree) pids() []int {
	pids := append([]int{tr.cmd}, tr.workers...)
	if tr.keeper != 0 {
		pids = append(pids, tr.keeper)
	}
	return pids
}

// alive returns the pids of the tree that still run.
func (tr tree) alive() []int {
	var alive []int
	for _, pid := range tr.pids() {
		if !processGone(pid) {
			alive = append(alive, pid)
		}
	}
	return alive
}

// waitTree waits for the "started CMD" line of p, then for n pid files of instance id.
func (tw *treeWatch) waitTree(p *proc, id string, n int) tree {
	tw.t.Helper()
	var tr tree
	tw.w.waitLine(30*time.Second, "the started CMD line of "+p.name, func(l line) bool {
		m, ok := jsonLog(l.text)
		if !ok || l.proc != p || m["msg"] != "leasehold: started CMD" {
			return false
		}
		tr.cmd = jsonInt(m["pid"])
		tr.keeper = jsonInt(m["keeper"])
		return true
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		tr.workers = nil
		for _, f := range readPidFiles(tw.w.dir) {
			if f.id == id && !processGone(f.pid) {
				tr.workers = append(tr.workers, f.pid)
			}
		}
		if len(tr.workers) >= n {
			break
		}
		if time.Now().After(deadline) {
			tw.t.Fatalf("%s: %d workers of its tree run after 30s, want %d", p.name, len(tr.workers), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	tw.mu.Lock()
	tw.known = append(tw.known, tr.pids()...)
	tw.mu.Unlock()
	return tr
}

// goneWithin starts watching the tree: the channel receives how long after start every process
// of the tree was gone, or -1 after timeout.
func goneWithin(tr tree, start time.Time, timeout time.Duration) <-chan time.Duration {
	c := make(chan time.Duration, 1)
	go func() {
		for len(tr.alive()) > 0 {
			if time.Since(start) > timeout {
				c <- -1
				return
			}
			time.Sleep(time.Millisecond)
		}
		c <- time.Since(start)
	}()
	return c
}

func jsonLog(text string) (map[string]any, bool) {
	var m map[string]any
	if json.Unmarshal([]byte(text), &m) != nil {
		return nil, false
	}
	return m, true
}

func jsonInt(v any) int {
	f, _ := v.(float64)
	return int(f)
}

// markerAlive parses the alive=... field of a marker's CMD-START line.
func markerAlive(text string) []string {
	for _, f := range strings.Fields(text) {
		if v, ok := strings.CutPrefix(f, "alive="); ok && v != "" {
			return strings.Split(v, ",")
		}
	}
	return nil
}

// The supervisor is SIGKILLed: its keeper kills CMD's whole tree at once, before the next
// leader (another leasehold over the same store) starts its CMD.
func TestRunTreeSupervisorKilled(t *testing.T) {
	for _, shape := range treeShapes() {
		t.Run(shape.name, func(t *testing.T) {
			shape.skipUnreachable(t)
			w := newWorld(t)
			tw := newTreeWatch(t, w)
			a := w.start("a", shape.env, treeArgs(w.storeURL(), "a", shape.cmd)...)
			first := tw.waitTree(a, "a", shape.workers)
			b := w.start("b", []string{"LEASEHOLD_TEST_CMD=marker"}, treeArgs(w.storeURL(), "b", helperCmd())...)
			time.Sleep(testR) // b reads the record and follows

			killedAt := time.Now()
			if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			gone := goneWithin(first, killedAt, testL)
			ev, _ := w.waitCmd(3*(testL+testR), "CMD-START", func(e cmdEvent) bool { return e.id == "b" })
			l := lastLine(w, "b", "CMD-START")
			if alive := markerAlive(l); len(alive) > 0 {
				t.Errorf("the next leader's CMD started while processes of the killed leader's tree ran: %v (tree %+v)", alive, first)
			}
			if alive := first.alive(); len(alive) > 0 {
				t.Errorf("the next leader's CMD runs, and so do processes %v of the killed leader's tree %+v", alive, first)
			}
			switch d := <-gone; {
			case d < 0:
				t.Errorf("processes %v of the killed leader's tree still ran %v after its SIGKILL", first.alive(), testL)
			default:
				t.Logf("SIGKILL of the supervisor → its tree %+v gone in %v; the next CMD started %v after the SIGKILL",
					first, d.Round(100*time.Microsecond), ev.at.Sub(killedAt).Round(time.Millisecond))
			}
			tw.check()
			if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := w.waitExit(b, 10*time.Second); code != 0 {
				t.Errorf("b exited %d, want 0", code)
			}
		})
	}
}

// lastLine returns the last line of output of the process named name that starts with prefix.
func lastLine(w *world, name, prefix string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.procs {
		if p.name != name {
			continue
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		for i := len(p.output) - 1; i >= 0; i-- {
			if strings.HasPrefix(p.output[i], prefix) {
				return p.output[i]
			}
		}
	}
	return ""
}

// The leader loses its lease (its store becomes unreachable; the other instance still reaches
// it): the whole tree gets SIGTERM, then SIGKILL after the grace (its helpers ignore SIGTERM),
// leasehold reports CMD stopped only once no process of the tree is left, and all of it is
// gone before the next leader starts its CMD.
func TestRunTreeLeadershipLost(t *testing.T) {
	for _, shape := range treeShapes() {
		t.Run(shape.name, func(t *testing.T) {
			shape.skipUnreachable(t)
			w := newWorld(t)
			// a reaches the store through a symbolic link to its directory; cutting a off
			// points the link at a regular file: a's every store call fails (ENOTDIR), b's
			// go on.
			real, link := filepath.Join(w.dir, "real"), filepath.Join(w.dir, "link")
			if err := os.Mkdir(real, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(real, link); err != nil {
				t.Fatal(err)
			}
			storeA, storeB := "file://"+link+"/registry.json", "file://"+real+"/registry.json"
			tw := newTreeWatch(t, w)
			a := w.start("a", append([]string{"LEASEHOLD_TEST_IGNORE_TERM=1"}, shape.env...), treeArgs(storeA, "a", shape.cmd)...)
			first := tw.waitTree(a, "a", shape.workers)
			b := w.start("b", []string{"LEASEHOLD_TEST_CMD=marker"}, treeArgs(storeB, "b", helperCmd())...)
			time.Sleep(testR)

			blocker := filepath.Join(w.dir, "not-a-directory")
			if err := os.WriteFile(blocker, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(blocker, link+".new"); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(link+".new", link); err != nil {
				t.Fatal(err)
			}
			cutAt := time.Now()
			gone := goneWithin(first, cutAt, 2*testL)

			stopped := false
			deadline := time.After(3 * (testL + testR))
		lines:
			for {
				select {
				case <-deadline:
					t.Fatalf("b's CMD has not started within %v of a's store cut off", 3*(testL+testR))
				case l := <-w.lines:
					if m, ok := jsonLog(l.text); ok && l.proc == a && m["msg"] == "leasehold: CMD stopped" {
						stopped = true
						if alive := first.alive(); len(alive) > 0 {
							t.Errorf("leasehold reported CMD stopped while processes %v of its tree %+v ran", alive, first)
						}
						t.Logf("a reported CMD stopped %v after its store was cut off", time.Since(cutAt).Round(time.Millisecond))
						continue
					}
					if ev, ok := parseCmdEvent(l.text); ok && ev.kind == "CMD-START" && ev.id == "b" {
						if alive := markerAlive(l.text); len(alive) > 0 {
							t.Errorf("the next leader's CMD started while processes of the former leader's tree ran: %v (tree %+v)", alive, first)
						}
						t.Logf("b's CMD started %v after a's store was cut off", ev.at.Sub(cutAt).Round(time.Millisecond))
						break lines
					}
				}
			}
			if !stopped {
				t.Errorf("a never reported CMD stopped before b's CMD started")
			}
			switch d := <-gone; {
			case d < 0:
				t.Errorf("processes %v of the former leader's tree still ran %v after its store was cut off", first.alive(), 2*testL)
			default:
				t.Logf("store cut off → the tree %+v gone in %v (grace %v: its helpers ignore SIGTERM)", first, d.Round(time.Millisecond), maxGrace(testL, testR))
			}
			tw.check()
			if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := w.waitExit(b, 10*time.Second); code != 0 {
				t.Errorf("b exited %d, want 0", code)
			}
		})
	}
}

// The keeper between leasehold and CMD is SIGKILLed: CMD's whole tree dies (a double-fork
// daemon included, on Linux), and leasehold treats it as CMD exiting: without --restart it
// releases the lease and exits 128+9; with --restart it runs CMD again, once the old tree is
// gone.
func TestRunKilledKeeper(t *testing.T) {
	daemon := killedKeeperShape()
	t.Run("exit", func(t *testing.T) {
		w := newWorld(t)
		tw := newTreeWatch(t, w)
		a := w.start("a", daemon.env, treeArgs(w.storeURL(), "a", daemon.cmd)...)
		tr := tw.waitTree(a, "a", daemon.workers)
		if tr.keeper == 0 {
			t.Fatal(`no keeper pid in leasehold's "started CMD" line`)
		}
		killedAt := time.Now()
		if err := syscall.Kill(tr.keeper, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		gone := goneWithin(tr, killedAt, 10*time.Second)
		attrs := w.logLine(10*time.Second, "leasehold: CMD exited by itself: releasing the lease")
		if alive := tr.alive(); len(alive) > 0 {
			t.Errorf("leasehold releases the lease while processes %v of the tree %+v run", alive, tr)
		}
		if d := <-gone; d < 0 {
			t.Errorf("processes %v of the tree still run 10s after the keeper's SIGKILL", tr.alive())
		} else {
			t.Logf("SIGKILL of the keeper → the tree %+v gone in %v", tr, d.Round(100*time.Microsecond))
		}
		if code := w.waitExit(a, 10*time.Second); code != 128+9 || jsonInt(attrs["status"]) != 128+9 {
			t.Errorf("leasehold exited %d (CMD status %v), want 137 for both", code, attrs["status"])
		}
		if st := statusJSON(t, w.storeURL(), "jobs"); st.State != "released" {
			t.Errorf("lease state after leasehold exited = %q, want released", st.State)
		}
	})
	t.Run("restart", func(t *testing.T) {
		w := newWorld(t)
		tw := newTreeWatch(t, w)
		env := []string{"LEASEHOLD_TEST_CMD=daemon-then-marker"}
		if !wholeTree {
			env = []string{"LEASEHOLD_TEST_CMD=worker-then-marker"}
		}
		a := w.start("a", env, treeArgs(w.storeURL(), "a", daemon.cmd, "--restart")...)
		tr := tw.waitTree(a, "a", daemon.workers)
		if tr.keeper == 0 {
			t.Fatal(`no keeper pid in leasehold's "started CMD" line`)
		}
		led := statusJSON(t, w.storeURL(), "jobs").Term
		if err := syscall.Kill(tr.keeper, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		ev, _ := w.waitCmd(10*time.Second, "CMD-START", nil)
		if alive := markerAlive(lastLine(w, "a", "CMD-START")); len(alive) > 0 {
			t.Errorf("the restarted CMD started while processes of the old tree ran: %v (tree %+v)", alive, tr)
		}
		if ev.term == 0 || ev.term != led {
			t.Errorf("restarted CMD has LEASEHOLD_TERM %d, want %d (the same leadership)", ev.term, led)
		}
		if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := w.waitExit(a, 10*time.Second); code != 0 {
			t.Errorf("leasehold exited %d, want 0", code)
		}
	})
}

// A keeper that does not run (SIGSTOP) does not keep CMD's tree alive: at the end of the
// grace leasehold SIGKILLs the tree itself; then it kills the keeper, releases the lease and
// exits 0.
func TestRunStoppedKeeper(t *testing.T) {
	daemon := killedKeeperShape()
	w := newWorld(t)
	tw := newTreeWatch(t, w)
	const grace = 300 * time.Millisecond
	a := w.start("a", daemon.env, treeArgs(w.storeURL(), "a", daemon.cmd, "--grace", grace.String())...)
	tr := tw.waitTree(a, "a", daemon.workers)
	if tr.keeper == 0 {
		t.Fatal(`no keeper pid in leasehold's "started CMD" line`)
	}
	if err := syscall.Kill(tr.keeper, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	workers := tree{cmd: tr.cmd, workers: tr.workers}
	d := <-goneWithin(workers, stoppedAt, 5*time.Second)
	switch {
	case d < 0:
		t.Fatalf("processes %v of the tree still run 5s after SIGTERM of leasehold, its keeper stopped", workers.alive())
	case d > grace+slack:
		t.Errorf("the tree was gone %v after SIGTERM of leasehold, its keeper stopped; want the grace %v (+%v slack)", d, grace, slack)
	default:
		t.Logf("keeper stopped: the tree gone %v after SIGTERM of leasehold (grace %v)", d.Round(time.Millisecond), grace)
	}
	if code := w.waitExit(a, 10*time.Second); code != 0 {
		t.Errorf("leasehold exited %d, want 0", code)
	}
	if !processGone(tr.keeper) {
		t.Errorf("the stopped keeper %d still there after leasehold exited", tr.keeper)
	}
	if st := statusJSON(t, w.storeURL(), "jobs"); st.State != "released" {
		t.Errorf("lease state after leasehold exited = %q, want released", st.State)
	}
}

// Each process of CMD's tree gets SIGTERM once when leasehold stops (C1): a shell's trap runs
// once, in CMD, in its child in CMD's process group, and in a descendant that left the group
// with setsid. The keeper signals the group, then only the descendants outside it.
func TestRunOneSIGTERM(t *testing.T) {
	if !wholeTree {
		t.Skipf("on %s leasehold reaches CMD's process group only", runtime.GOOS)
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid command")
	}
	w := newWorld(t)
	// A shell that counts the SIGTERMs it gets in <name>.terms, and loops until SIGKILL.
	loop := func(name string) string {
		return `trap 'echo TERM >> "$LEASEHOLD_TEST_DIR/` + name + `.terms"' TERM; echo TRAP-READY ` + name +
			`; while :; do sleep 5 & wait $!; done`
	}
	script := `sh -c ` + shellQuote(loop("child")) + ` & setsid sh -c ` + shellQuote(loop("setsid")) + ` & ` + loop("cmd")
	p := w.start("a", nil, treeArgs(w.storeURL(), "a", []string{"/bin/sh", "-c", script}, "--grace", "600ms")...)
	ready := map[string]bool{}
	for len(ready) < 3 {
		l := w.waitLine(30*time.Second, "TRAP-READY", func(l line) bool { return strings.HasPrefix(l.text, "TRAP-READY ") })
		ready[strings.TrimPrefix(l.text, "TRAP-READY ")] = true
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := w.waitExit(p, 10*time.Second); code != 0 {
		t.Errorf("leasehold exited %d, want 0", code)
	}
	for _, name := range []string{"cmd", "child", "setsid"} {
		data, err := os.ReadFile(filepath.Join(w.dir, name+".terms"))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if n := strings.Count(string(data), "TERM"); n != 1 {
			t.Errorf("%s got SIGTERM %d times, want once", name, n)
		}
	}
}
