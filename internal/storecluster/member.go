//go:build unix

package storecluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Member is one server process of a cluster. Its Command is started again, on the same data,
// by Start after a Kill. Its methods may be called from any goroutine.
type Member struct {
	// Name identifies the member in logs and reports ("etcd-1", "pg-primary").
	Name string
	// Addr is the host:port clients connect to.
	Addr string
	// Command returns a new command that runs the server (a fresh exec.Cmd each time, since an
	// exec.Cmd runs once). The process gets its own process group.
	Command func() *exec.Cmd
	// Ready reports whether the started server answers; Start polls it. Nil: the client
	// port accepts a TCP connection.
	Ready func(ctx context.Context) error
	// Log, when set, is a file the server's stdout and stderr are appended to, across restarts:
	// a member that fails to start, or misbehaves under a fault, says why there.
	Log string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when the current process has been waited for
	paused bool
}

// Start starts the server and waits until it is ready or ctx ends. Starting a running member
// is an error.
func (m *Member) Start(ctx context.Context) error {
	m.mu.Lock()
	if m.cmd != nil {
		m.mu.Unlock()
		return fmt.Errorf("storecluster: %s is already running", m.Name)
	}
	cmd := m.Command()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
	var log *os.File
	if m.Log != "" {
		f, err := os.OpenFile(m.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			m.mu.Unlock()
			return fmt.Errorf("storecluster: log of %s: %w", m.Name, err)
		}
		log, cmd.Stdout, cmd.Stderr = f, f, f
	}
	err := cmd.Start()
	if log != nil {
		log.Close() // the process has its own descriptor
	}
	if err != nil {
		m.mu.Unlock()
		return fmt.Errorf("storecluster: start %s: %w", m.Name, err)
	}
	exited := make(chan struct{})
	m.cmd, m.exited, m.paused = cmd, exited, false
	m.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	return m.WaitReady(ctx)
}

// WaitReady waits until the member answers (Ready, or its port accepts) or ctx ends.
func (m *Member) WaitReady(ctx context.Context) error {
	for {
		err := m.ready(ctx)
		if err == nil {
			return nil
		}
		m.mu.Lock()
		exited := m.exited
		m.mu.Unlock()
		if exited != nil {
			select {
			case <-exited:
				return fmt.Errorf("storecluster: %s exited before it was ready (last: %v)", m.Name, err)
			default:
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("storecluster: %s not ready: %w (last: %v)", m.Name, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (m *Member) ready(ctx context.Context) error {
	if m.Ready != nil {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return m.Ready(c)
	}
	c, err := net.DialTimeout("tcp", m.Addr, time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}

// Running reports whether the member's process is started and has not exited.
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL to the member's process group and its descendants' (signalTree) and waits
// for the process to exit. Killing a member that is not running does nothing.
func (m *Member) Kill() error { return m.stop(syscall.SIGKILL) }

// Stop sends SIGTERM (a clean shutdown) and waits for the process to exit, then SIGKILL after
// 10s.
func (m *Member) Stop() error { return m.stop(syscall.SIGTERM) }

func (m *Member) stop(sig syscall.Signal) error {
	m.mu.Lock()
	cmd, exited, paused := m.cmd, m.exited, m.paused
	m.cmd, m.exited, m.paused = nil, nil, false
	m.mu.Unlock()
	if cmd == nil {
		return nil
	}
	pgid := -cmd.Process.Pid
	var err error
	if sig == syscall.SIGKILL {
		err = signalTree(cmd.Process.Pid, sig)
	} else {
		err = syscall.Kill(pgid, sig) // a clean shutdown is the server's own, children included
	}
	if paused && sig != syscall.SIGKILL {
		_ = signalTree(cmd.Process.Pid, syscall.SIGCONT)
	}
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("storecluster: signal %s: %w", m.Name, err)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = signalTree(cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	return nil
}

// Pause sends SIGSTOP to the member's process group and its descendants' (signalTree): the
// server holds its connections and answers nothing, as a stalled machine does.
func (m *Member) Pause() error { return m.signal(syscall.SIGSTOP, true) }

// Resume sends SIGCONT after Pause.
func (m *Member) Resume() error { return m.signal(syscall.SIGCONT, false) }

func (m *Member) signal(sig syscall.Signal, paused bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return fmt.Errorf("storecluster: %s is not running", m.Name)
	}
	if err := signalTree(m.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("storecluster: signal %s: %w", m.Name, err)
	}
	m.paused = paused
	return nil
}

// Paused reports whether the member is paused (Pause without Resume since).
func (m *Member) Paused() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cmd != nil && m.paused
}

// Pid returns the member's process ID, or 0 when it is not running.
func (m *Member) Pid() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// StartAll starts members at once and waits until each is ready or ctx ends: servers that
// serve clients only once a quorum of them has met would wait for ever one after the other.
func StartAll(ctx context.Context, members []*Member) error {
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() { errs[i] = m.Start(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// FreeAddr returns a loopback host:port that was free a moment ago.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("storecluster: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// LookBinary finds a server binary: the path in the environment variable env when set, else
// name on PATH, else the first of fallbacks that exists. Missing: an error wrapping
// ErrUnavailable that names env.
func LookBinary(env, name string, fallbacks ...string) (string, error) {
	if p := os.Getenv(env); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%w: %s=%s: %v", ErrUnavailable, env, p, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, p := range fallbacks {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s not found (set %s)", ErrUnavailable, name, env)
}
