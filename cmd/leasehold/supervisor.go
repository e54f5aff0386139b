//go:build unix

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/cluster/holders"
)

// Restart back-off of --restart: the first restart waits minBackoff, each next one twice as
// long up to maxBackoff; a CMD that ran for resetBackoff or more starts the sequence again.
const (
	minBackoff   = 100 * time.Millisecond
	maxBackoff   = 30 * time.Second
	resetBackoff = 10 * time.Second
)

// keeperWait is how long the supervisor waits for the keeper to exit once the tree got
// SIGKILL; past it, it kills the keeper and ends the tree itself (see sweep). Reaping a killed
// tree takes the keeper milliseconds: it is that late only if stopped or stuck.
const keeperWait = time.Second

// supervisor runs CMD while this instance leads: its lead method is the election's LeaderFunc.
// CMD runs under a keeper (keeper.go), which answers for CMD's whole process tree.
type supervisor struct {
	argv    []string
	env     []string
	lease   string
	id      string
	grace   time.Duration
	restart bool
	log     *slog.Logger
	// reaper: leasehold is a child subreaper (Linux; see runCommand): the orphans of a killed
	// keeper's tree are reparented to it, and sweep ends them.
	reaper bool
	// hold is --hold-at-least: a CMD that exits by itself leaves the lease held until hold
	// after it started (C6).
	hold time.Duration
	// extraEnv is added to CMD's environment after the lease's variables (run --partitions:
	// LEASEHOLD_PARTITION).
	extraEnv []string

	// exited receives CMD's status when it exits by itself without --restart: leasehold then
	// releases the lease and exits with it.
	exited chan int
	// stopSignal, once set (SIGINT or SIGTERM received), is sent to CMD instead of SIGTERM.
	stopSignal atomic.Value
	// held is the status of the CMD whose lease is held after it exited (hold).
	held atomic.Pointer[int]

	// beforeStart, when set (tests), runs between the decision to start CMD and the check that
	// its leadership is still current.
	beforeStart func()

	mu      sync.Mutex
	current *child // the CMD running, if any
	starts  int
	last    *int // the last CMD's exit status
}

var errKeeperGone = errors.New("the keeper exited before starting CMD")

// errLeadershipEnded is startChild's answer when the leadership CMD was to run for ended
// before CMD started: CMD did not start, and must not.
var errLeadershipEnded = errors.New("the leadership ended before CMD started")

// child is one run of CMD, under its keeper.
type child struct {
	pid     int // CMD's pid, also its process group
	keeper  *os.Process
	control *os.File // the keeper's control pipe (see keeper.go)
	started time.Time

	exitOnce sync.Once
	exited   chan struct{} // closed once CMD has exited, or its keeper died: then status is set
	status   int
	left     int // processes of its tree left when CMD exited, as its keeper counted them

	killedKeeper atomic.Bool   // the supervisor killed the keeper (see end)
	done         chan struct{} // closed once the keeper has exited and no process of the tree is left
}

func (c *child) setExit(status, left int) {
	c.exitOnce.Do(func() {
		c.status, c.left = status, left
		close(c.exited)
	})
}

// send asks the keeper to send sig to CMD's process group, or to its whole tree.
func (c *child) send(sig os.Signal, tree bool) {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return
	}
	b := byte(s)
	if tree {
		b |= treeBit
	}
	_, _ = c.control.Write([]byte{b}) // fails once the keeper is gone: so is the tree
}

// newSupervisor returns the supervisor of CMD (argv); CMD's environment is leasehold's without
// the variables holding the store's URL: LEASEHOLD_STORE, and urlEnv when not "".
func newSupervisor(argv []string, lease, id string, grace time.Duration, restart bool, log *slog.Logger, urlEnv string) *supervisor {
	return &supervisor{
		argv: argv, env: cmdEnviron(urlEnv), lease: lease, id: id, grace: grace, restart: restart, log: log,
		exited: make(chan int, 1),
	}
}

// lead runs CMD for one leadership: it returns once CMD and its whole process tree have ended,
// which the election waits for before anything else may lead (W4, E7).
func (s *supervisor) lead(ctx context.Context) error {
	term, _ := cluster.TermOf(ctx)
	slot, _ := holders.SlotOf(ctx) // 0 without --holders
	backoff := minBackoff
	for {
		c, err := s.startChild(ctx, term, slot)
		if errors.Is(err, errLeadershipEnded) {
			s.log.Info("leasehold: leadership ended before CMD started: not starting it", "term", term)
			return nil
		}
		if err != nil {
			s.log.Error("leasehold: cannot start CMD", "cmd", s.argv[0], "error", err)
			if !s.restart {
				s.finish(127) // as a shell does for a command it cannot run
				return nil
			}
		} else {
			select {
			case <-c.exited:
				if c.left > 0 {
					s.log.Info("leasehold: CMD exited but left processes in its tree: stopping them",
						"pid", c.pid, "left", c.left, "signal", sigTerm)
					s.end(c, sigTerm, "processes left by CMD")
				} else {
					s.end(c, nil, "processes left by CMD")
				}
				s.log.Info("leasehold: CMD exited", "pid", c.pid, "status", c.status, "term", term)
				if ctx.Err() != nil {
					return nil
				}
				if !s.restart {
					s.holdLease(ctx, c)
					s.finish(c.status)
					return nil
				}
				if time.Since(c.started) >= resetBackoff {
					backoff = minBackoff
				}
			case <-ctx.Done():
				s.terminate(c)
				return nil
			}
		}
		s.log.Info("leasehold: restarting CMD", "in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// holdLease keeps this leadership, and with it the lease, which the election goes on renewing,
// until hold has passed since c started (C6). It ends early with the leadership: the lease
// lost, or leasehold stopping.
func (s *supervisor) holdLease(ctx context.Context, c *child) {
	until := c.started.Add(s.hold)
	d := time.Until(until)
	if s.hold <= 0 || d <= 0 {
		return
	}
	status := c.status
	s.held.Store(&status)
	s.log.Info("leasehold: CMD exited: keeping the lease for --hold-at-least", "status", c.status,
		"for", d.Round(time.Millisecond), "until", until.UTC().Format(time.RFC3339Nano))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// heldStatus is the status of a CMD that exited by itself while the lease was held after it.
func (s *supervisor) heldStatus() (int, bool) {
	if p := s.held.Load(); p != nil {
		return *p, true
	}
	return 0, false
}

func (s *supervisor) finish(status int) {
	select {
	case s.exited <- status:
	default:
	}
}

// startChild starts the keeper, which starts CMD with the lease's variables in its
// environment, in a process group of its own. It returns once CMD has started. CMD starts
// only while ctx, its leadership, is current (C1): the keeper, once running, waits for the
// go-ahead, which startChild gives only if ctx has not ended, under s.mu. A leadership that
// ends after that finds CMD started, and lead stops it; one that ended before never starts
// it: errLeadershipEnded.
func (s *supervisor) startChild(ctx context.Context, term uint64, slot int) (*child, error) {
	path, err := keeperPath()
	if err != nil {
		return nil, fmt.Errorf("the keeper: %w", err)
	}
	controlR, controlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		controlR.Close()
		controlW.Close()
		return nil, err
	}
	c := &child{control: controlW, exited: make(chan struct{}), done: make(chan struct{})}
	cmd := s.keeperCommand(path, term, slot)
	cmd.ExtraFiles = []*os.File{controlR, statusW} // the keeper's descriptors 3 and 4
	started := make(chan error, 1)
	go s.runKeeper(ctx, c, cmd, statusR, started)
	if err := <-started; err != nil {
		return nil, err
	}
	s.log.Info("leasehold: started CMD", "pid", c.pid, "keeper", c.keeper.Pid, "term", term)
	return c, nil
}

// keeperCommand is the keeper's command line: leasehold itself, told to keep CMD, with the
// lease's variables in CMD's environment.
func (s *supervisor) keeperCommand(path string, term uint64, slot int) *exec.Cmd {
	cmd := exec.Command(path, append([]string{keeperArg, "--"}, s.argv...)...)
	cmd.Args[0] = os.Args[0]
	cmd.Env = append(append([]string(nil), s.env...),
		"LEASEHOLD_LEASE="+s.lease,
		"LEASEHOLD_INSTANCE_ID="+s.id,
		"LEASEHOLD_TERM="+strconv.FormatUint(term, 10),
		"LEASEHOLD_SLOT="+strconv.Itoa(slot),
	)
	cmd.Env = append(cmd.Env, s.extraEnv...)
	// CMD is not in the terminal's foreground group: reading the terminal would stop it.
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = keeperAttr()
	return cmd
}

// runKeeper starts the keeper, gives it the go-ahead while ctx is current, and sends on
// started whether CMD started. Then it waits for the keeper to exit and records CMD's end.
func (s *supervisor) runKeeper(ctx context.Context, c *child, cmd *exec.Cmd, statusR *os.File, started chan<- error) {
	// The parent-death signal follows the thread that forks (see keeperAttr): this
	// goroutine keeps its thread until the keeper has exited, then gives it back.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	controlR, statusW := cmd.ExtraFiles[0], cmd.ExtraFiles[1]
	err := cmd.Start()
	controlR.Close()
	statusW.Close()
	if err != nil {
		c.control.Close()
		statusR.Close()
		started <- fmt.Errorf("the keeper: %w", err)
		return
	}
	c.keeper = cmd.Process
	if !s.goAhead(ctx, c) {
		_ = cmd.Wait()
		statusR.Close()
		started <- errLeadershipEnded
		return
	}
	first, readDone := c.readStatus(statusR)
	if err := <-first; err != nil {
		_ = cmd.Wait()
		<-readDone
		c.control.Close()
		if err == errKeeperGone {
			err = fmt.Errorf("%w (%v)", err, cmd.ProcessState)
		}
		started <- err
		return
	}
	c.started = time.Now()
	s.mu.Lock()
	s.current = c
	s.starts++
	s.mu.Unlock()
	started <- nil

	_ = cmd.Wait() // the status is in ProcessState
	<-readDone     // every line the keeper wrote before it exited
	c.control.Close()
	s.keeperExited(c, cmd.ProcessState)
}

// goAhead tells the keeper to start CMD, under s.mu, unless ctx (the leadership) has ended:
// then it closes the control pipe, which makes the keeper exit without starting CMD, and
// returns false.
func (s *supervisor) goAhead(ctx context.Context, c *child) bool {
	if s.beforeStart != nil {
		s.beforeStart()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ctx.Err() != nil {
		c.control.Close()
		return false
	}
	if _, err := c.control.Write([]byte{startByte}); err != nil {
		c.control.Close() // the keeper is gone: it answers nothing, and readStatus says so
	}
	return true
}

// readStatus reads the keeper's status lines until it exits. first gets nil once CMD has
// started (its pid read), or why it did not; readDone is closed after the last line.
func (c *child) readStatus(statusR *os.File) (first <-chan error, readDone <-chan struct{}) {
	firstc := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer statusR.Close()
		answered := false
		sc := bufio.NewScanner(statusR)
		for sc.Scan() {
			kind, rest, _ := strings.Cut(sc.Text(), " ")
			switch kind {
			case "pid":
				if !answered {
					c.pid, _ = strconv.Atoi(rest)
					answered = true
					firstc <- nil
				}
			case "error":
				if !answered {
					answered = true
					firstc <- errors.New(rest)
				}
			case "exit":
				var status, left int
				if _, err := fmt.Sscan(rest, &status, &left); err == nil {
					c.setExit(status, left)
				}
			}
		}
		if !answered {
			firstc <- errKeeperGone
		}
	}()
	return firstc, done
}

// keeperExited records the end of CMD once its keeper has exited. A keeper exits by itself,
// with CMD's status, only once the tree is empty. Otherwise it was killed or crashed: CMD dies
// with it (on Linux, its parent-death signal), and sweep ends the rest; a CMD whose end the
// keeper did not report counts as exited.
func (s *supervisor) keeperExited(c *child, ps *os.ProcessState) {
	reported := false
	select {
	case <-c.exited:
		reported = true
	default:
	}
	if !reported || !ps.Exited() || ps.ExitCode() != c.status {
		status := exitStatus(ps)
		if status == 0 {
			status = exitFailure
		}
		if !c.killedKeeper.Load() {
			s.log.Error("leasehold: the keeper of CMD died: ending CMD's tree, as if CMD had exited",
				"keeper", c.keeper.Pid, "pid", c.pid, "keeperStatus", status)
		}
		c.setExit(status, -1) // when CMD's own status was not reported
		s.sweep(c)
	}
	s.mu.Lock()
	s.current = nil
	st := c.status
	s.last = &st
	s.mu.Unlock()
	close(c.done)
}

// terminate ends CMD's whole tree: SIGTERM (or the signal leasehold received), then SIGKILL
// once the grace has passed. It returns when no process of the tree is left.
func (s *supervisor) terminate(c *child) {
	sig := sigTerm
	if v := s.stopSignal.Load(); v != nil {
		sig = v.(os.Signal)
	}
	s.log.Info("leasehold: stopping CMD", "pid", c.pid, "signal", sig, "grace", s.grace)
	s.end(c, sig, "CMD")
	s.log.Info("leasehold: CMD stopped", "pid", c.pid, "status", c.status)
}

// end has the keeper send sig (unless nil) to the whole tree and waits for the tree to be
// empty; once the grace has passed, the tree gets SIGKILL, from the keeper and from the
// supervisor itself (kill). A keeper that has still not exited keeperWait later is killed, and
// sweep ends the tree. what names the processes in the log.
func (s *supervisor) end(c *child, sig os.Signal, what string) {
	if sig != nil {
		c.send(sig, true)
	}
	t := time.NewTimer(s.grace)
	defer t.Stop()
	select {
	case <-c.done:
		return
	case <-t.C:
	}
	s.log.Warn("leasehold: "+what+" did not stop within the grace: SIGKILL", "pid", c.pid, "grace", s.grace)
	c.send(sigKill, true)
	s.kill(c)
	t.Reset(keeperWait)
	select {
	case <-c.done:
		return
	case <-t.C:
	}
	s.log.Error("leasehold: the keeper has not exited after SIGKILL of CMD's tree: killing the keeper", "keeper", c.keeper.Pid, "wait", keeperWait)
	c.killedKeeper.Store(true)
	_ = c.keeper.Kill()
	<-c.done
}

// kill SIGKILLs CMD's tree from the supervisor, at the time its keeper is asked to, so that the
// tree dies at the end of the grace even if the keeper is slow to run (a loaded machine) or
// stopped: CMD's group and, on Linux, every descendant of the keeper. The keeper reaps them.
func (s *supervisor) kill(c *child) {
	select {
	case <-c.exited: // CMD's group may be empty, its number reused
	default:
		_ = signalGroup(c.pid, sigKill)
	}
	// The keeper not yet reaped (the check uses its pidfd), its pid is still its own.
	if c.keeper.Signal(syscall.Signal(0)) != nil {
		return
	}
	for _, pid := range descendants(c.keeper.Pid, nil) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// foreign reports whether a child of leasehold's is in leasehold's own process group: not a
// keeper (which has a group of its own) nor anything of CMD's tree, but a process leasehold
// itself started, such as a credential helper of a store's client.
func (s *supervisor) foreign(pid int) bool {
	pgid, err := syscall.Getpgid(pid)
	return err == nil && pgid == syscall.Getpgrp()
}

// sweep ends what is left of CMD's tree once its keeper died without ending it. CMD itself
// dies with the keeper on Linux (its parent-death signal). The other processes of the tree
// were reparented: to leasehold when it is a child subreaper (s.reaper), which finds them
// among its own descendants (see foreign) and reaps them; otherwise to init, and only those of
// CMD's group can be reached. It SIGKILLs them until none is left.
func (s *supervisor) sweep(c *child) {
	self := os.Getpid()
	warned := time.Now()
	for {
		left := 0
		if s.reaper {
			for _, pid := range descendants(self, s.foreign) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				// Reaps it if it is a child (reparented to leasehold); nothing otherwise.
				_, _ = syscall.Wait4(pid, nil, syscall.WNOHANG, nil)
				left++
			}
		} else if c.pid != 0 && groupAlive(c.pid) {
			_ = signalGroup(c.pid, sigKill)
			left++
		}
		if left == 0 {
			return
		}
		if time.Since(warned) >= time.Second {
			s.log.Warn("leasehold: processes of CMD's tree are still there after SIGKILL", "pid", c.pid, "left", left)
			warned = time.Now()
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// forward sends a signal to CMD's group, if CMD runs.
func (s *supervisor) forward(sig os.Signal) {
	s.mu.Lock()
	c := s.current
	s.mu.Unlock()
	if c == nil {
		return
	}
	s.log.Info("leasehold: forwarding signal to CMD", "pid", c.pid, "signal", sig)
	c.send(sig, false)
}

func (s *supervisor) view() cmdView {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := cmdView{Starts: s.starts, LastStatus: s.last}
	if s.current != nil {
		v.Running, v.PID = true, s.current.pid
	}
	return v
}

func (s *supervisor) String() string { return fmt.Sprint(s.argv) }

// cmdEnviron is leasehold's environment less LEASEHOLD_STORE and urlEnv (the variable the
// configuration's Registry reads its URL from, when not ""): the store's URL may carry its
// password, which CMD has no use for.
func cmdEnviron(urlEnv string) []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, storeEnv+"=") || urlEnv != "" && strings.HasPrefix(kv, urlEnv+"=")
	})
}
