package kubetest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// process is a server started by the harness, its output kept in a log file whose tail is
// shown when it fails.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{} // closed when the process has exited
	err     error         // its exit status, set before exited is closed
	once    sync.Once
}

func startProcess(name, logPath, bin string, args ...string) (*process, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The server dies with the test binary, even when that is killed: no server outlives the
	// tests.
	cmd.SysProcAttr = dieWithParent()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("kubetest: start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	return p, nil
}

// stop ends the process: SIGTERM, then SIGKILL after grace. It returns once it has exited.
func (p *process) stop(grace time.Duration) {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(grace):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
}

// kill ends the process at once, as a crash would, and returns once it has exited.
func (p *process) kill() {
	p.once.Do(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
}

// logTail is the end of the process's output, for error messages.
func (p *process) logTail() string {
	data, _ := os.ReadFile(p.logPath)
	const max = 3000
	if len(data) > max {
		data = data[len(data)-max:]
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return string(data)
}

// waitReady calls ready every 100 ms until it returns nil, the process exits or timeout
// passes. Polling is the only way to learn that another process is ready to serve.
func (p *process) waitReady(timeout time.Duration, ready func() error) error {
	deadline := time.After(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := errors.New("not checked yet")
	for {
		if last = ready(); last == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("kubetest: %s exited (%v) before it was ready; its log ends with:\n%s", p.name, p.err, p.logTail())
		case <-deadline:
			return fmt.Errorf("kubetest: %s not ready after %v (last check: %v); its log ends with:\n%s", p.name, timeout, last, p.logTail())
		case <-tick.C:
		}
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func portString(p int) string { return strconv.Itoa(p) }
