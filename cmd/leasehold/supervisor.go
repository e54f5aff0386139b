//go:build unix

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

// Restart back-off of --restart: the first restart waits minBackoff, each next one twice as
// long up to maxBackoff; a CMD that ran for resetBackoff or more starts the sequence again.
const (
	minBackoff   = 100 * time.Millisecond
	maxBackoff   = 30 * time.Second
	resetBackoff = 10 * time.Second
)

// supervisor runs CMD while this instance leads: its lead method is the election's LeaderFunc.
type supervisor struct {
	argv    []string
	env     []string
	lease   string
	id      string
	grace   time.Duration
	restart bool
	log     *slog.Logger

	// exited receives CMD's status when it exits by itself without --restart: leasehold then
	// releases the lease and exits with it.
	exited chan int
	// stopSignal, once set (SIGINT or SIGTERM received), is sent to CMD instead of SIGTERM.
	stopSignal atomic.Value

	mu      sync.Mutex
	current *child // the CMD running, if any
	starts  int
	last    *int // the last CMD's exit status
}

// child is one run of CMD.
type child struct {
	pid     int // also its process group
	started time.Time
	done    chan struct{} // closed once CMD has exited and been reaped
	status  int           // valid after done
}

func newSupervisor(argv []string, lease, id string, grace time.Duration, restart bool, log *slog.Logger) *supervisor {
	return &supervisor{
		argv: argv, env: os.Environ(), lease: lease, id: id, grace: grace, restart: restart, log: log,
		exited: make(chan int, 1),
	}
}

// lead runs CMD for one leadership: it returns once CMD (and its process group) has ended,
// which the election waits for before anything else may lead (W4, E7).
func (s *supervisor) lead(ctx context.Context) error {
	term, _ := cluster.TermOf(ctx)
	backoff := minBackoff
	for {
		c, err := s.startChild(term)
		if err != nil {
			s.log.Error("leasehold: cannot start CMD", "cmd", s.argv[0], "error", err)
			if !s.restart {
				s.finish(127) // as a shell does for a command it cannot run
				return nil
			}
		} else {
			select {
			case <-c.done:
				s.reapGroup(c.pid, sigTerm) // what CMD left behind in its group
				s.log.Info("leasehold: CMD exited", "pid", c.pid, "status", c.status, "term", term)
				if ctx.Err() != nil {
					return nil
				}
				if !s.restart {
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

func (s *supervisor) finish(status int) {
	select {
	case s.exited <- status:
	default:
	}
}

// startChild starts CMD with the lease's variables in its environment, in a process group of
// its own.
func (s *supervisor) startChild(term uint64) (*child, error) {
	c := &child{done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// The parent-death signal follows the thread that forks (see childAttr): this goroutine
		// keeps its thread until CMD has exited, then gives it back.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cmd := exec.Command(s.argv[0], s.argv[1:]...)
		cmd.Env = append(append([]string(nil), s.env...),
			"LEASEHOLD_LEASE="+s.lease,
			"LEASEHOLD_INSTANCE_ID="+s.id,
			"LEASEHOLD_TERM="+strconv.FormatUint(term, 10),
		)
		// CMD is not in the terminal's foreground group: reading the terminal would stop it.
		cmd.Stdin = nil
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		cmd.SysProcAttr = childAttr()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		c.pid, c.started = cmd.Process.Pid, time.Now()
		s.mu.Lock()
		s.current = c
		s.starts++
		s.mu.Unlock()
		started <- nil
		_ = cmd.Wait() // the status is in ProcessState
		c.status = exitStatus(cmd.ProcessState)
		s.mu.Lock()
		s.current = nil
		st := c.status
		s.last = &st
		s.mu.Unlock()
		close(c.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	s.log.Info("leasehold: started CMD", "pid", c.pid, "term", term)
	return c, nil
}

// terminate ends CMD's process group: SIGTERM (or the signal leasehold received), then
// SIGKILL once the grace has passed. It returns when CMD has exited.
func (s *supervisor) terminate(c *child) {
	sig := sigTerm
	if v := s.stopSignal.Load(); v != nil {
		sig = v.(os.Signal)
	}
	s.log.Info("leasehold: stopping CMD", "pid", c.pid, "signal", sig, "grace", s.grace)
	deadline := time.Now().Add(s.grace)
	_ = signalGroup(c.pid, sig)
	t := time.NewTimer(s.grace)
	defer t.Stop()
	select {
	case <-c.done:
		s.waitGroup(c.pid, deadline)
	case <-t.C:
		s.log.Warn("leasehold: CMD did not stop within the grace: SIGKILL", "pid", c.pid, "grace", s.grace)
		_ = signalGroup(c.pid, sigKill)
		<-c.done
	}
	s.log.Info("leasehold: CMD stopped", "pid", c.pid, "status", c.status)
}

// reapGroup ends what is left of a group whose leader CMD exited: sig, then SIGKILL after the
// grace. Usually the group is already empty.
func (s *supervisor) reapGroup(pgid int, sig os.Signal) {
	if !groupAlive(pgid) {
		return
	}
	s.log.Info("leasehold: CMD exited but left processes in its group: stopping them", "pgid", pgid, "signal", sig)
	_ = signalGroup(pgid, sig)
	s.waitGroup(pgid, time.Now().Add(s.grace))
}

// waitGroup waits until the process group is empty, and SIGKILLs it at the deadline. There is
// no notification for the end of processes that are not our children, hence the polling.
func (s *supervisor) waitGroup(pgid int, deadline time.Time) {
	for groupAlive(pgid) {
		if time.Now().After(deadline) {
			s.log.Warn("leasehold: processes of CMD's group did not stop within the grace: SIGKILL", "pgid", pgid)
			_ = signalGroup(pgid, sigKill)
			return
		}
		time.Sleep(5 * time.Millisecond)
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
	_ = signalGroup(c.pid, sig)
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
