package proctest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// The environment variables through which a driver configures its workers (Config.Env) and
// a worker reads its configuration (ServeWorker). EnvID being set is what makes a process a
// worker.
const (
	EnvID            = "LEASEHOLD_WORKER_ID"
	EnvURL           = "LEASEHOLD_WORKER_URL"
	EnvLease         = "LEASEHOLD_WORKER_LEASE"
	EnvLeaseDuration = "LEASEHOLD_WORKER_LEASE_DURATION"
	EnvRenewInterval = "LEASEHOLD_WORKER_RENEW_INTERVAL"
	EnvLog           = "LEASEHOLD_WORKER_LOG"
)

// Config is what every worker is told: who it is and what it elects over. A driver with
// more to say (the campaign's fenced resource, the bench's worker kinds) adds variables of
// its own to Spec.Env.
type Config struct {
	ID            string        // the instance ID, without spaces or newlines
	URL           string        // the store URL (or the lock's, for a worker with its own)
	Lease         string        // the lease name
	LeaseDuration time.Duration // L
	RenewInterval time.Duration // R
	Log           string        // the shared log's path; "" when the worker writes none
}

// Env returns c as environment variables, leaving out the fields not set: a driver may
// give some of them in Spec.Env instead.
func (c Config) Env() []string {
	var env []string
	add := func(name, value string) {
		if value != "" {
			env = append(env, name+"="+value)
		}
	}
	add(EnvID, c.ID)
	add(EnvURL, c.URL)
	add(EnvLease, c.Lease)
	if c.LeaseDuration != 0 {
		add(EnvLeaseDuration, c.LeaseDuration.String())
	}
	if c.RenewInterval != 0 {
		add(EnvRenewInterval, c.RenewInterval.String())
	}
	add(EnvLog, c.Log)
	return env
}

// Spec says how to start a worker process.
type Spec struct {
	Config
	Name string   // names the process in errors; Config.ID when empty
	Path string   // the program: the test binary (os.Args[0]) or this command (os.Executable)
	Args []string // its arguments: "-test.run=^$" makes a test binary run no test
	Env  []string // added to this process's environment after Config's variables

	// Line receives each line the worker writes on stdout, in order, on the worker's reader
	// goroutine. For a worker whose timing is measured it must not block (Inbox.Put): a
	// reader that stops reading fills the pipe, and the worker then blocks writing a line,
	// maybe while leading.
	Line func(line string)
	// Exit receives Wait's result once the worker has exited, after its last line.
	Exit func(err error)
}

// Proc is a running worker process.
//
// It runs in a process group of its own, so that Signal reaches it and whatever it started,
// and nothing else. It dies with its driver: on Linux the kernel SIGKILLs it when the driver
// dies (even while it is stopped by SIGSTOP, when it could not notice anything), and
// everywhere its stdin, a pipe from the driver, reaches EOF (ServeWorker's workers exit then).
type Proc struct {
	ID    string // Spec.Name, or the worker's Config.ID
	Cmd   *exec.Cmd
	Stdin io.WriteCloser // the elector workers read nothing from it but its EOF

	stderr *tailBuffer
	done   chan struct{} // closed once stdout is drained and Wait returned
	err    error         // Wait's, set before done closes
}

// Start starts a worker process. Its stdout lines, then its exit, arrive through s.Line and
// s.Exit.
func Start(s Spec) (*Proc, error) {
	p := &Proc{ID: s.Name, stderr: &tailBuffer{}, done: make(chan struct{})}
	if p.ID == "" {
		p.ID = s.ID
	}
	p.Cmd = exec.Command(s.Path, s.Args...)
	p.Cmd.Env = append(append(os.Environ(), s.Config.Env()...), s.Env...)
	p.Cmd.SysProcAttr = sysProcAttr()
	p.Cmd.Stderr = p.stderr
	stdout, err := p.Cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if p.Stdin, err = p.Cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := p.Cmd.Start(); err != nil {
		return nil, fmt.Errorf("proctest: start worker %s (%s): %w", p.ID, s.Path, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20) // a result line may be long (the bench's many worker)
		for sc.Scan() {
			if s.Line != nil {
				s.Line(sc.Text())
			}
		}
		// Past a line too long to scan, keep reading: a worker blocked on a full pipe would
		// never exit, and Wait would wait for it.
		_, _ = io.Copy(io.Discard, stdout)
		p.err = p.Cmd.Wait()
		close(p.done)
		if s.Exit != nil {
			s.Exit(p.err)
		}
	}()
	return p, nil
}

// Signal sends sig to the worker's process group. Once the worker has been waited for, its
// process ID may belong to another process: Signal then returns an error and sends nothing.
func (p *Proc) Signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return fmt.Errorf("proctest: %v to worker %s: it has exited", sig, p.ID)
	default:
	}
	if err := signalGroup(p.Cmd.Process, sig); err != nil {
		return fmt.Errorf("proctest: %v to worker %s: %w", sig, p.ID, err)
	}
	return nil
}

// Kill SIGKILLs the worker's process group, unless it has exited, and closes its stdin: the
// cleanup that leaves no worker behind, a SIGSTOPped one included.
func (p *Proc) Kill() {
	_ = p.Signal(syscall.SIGKILL)
	_ = p.Stdin.Close()
}

// Done is closed once the worker has exited and its stdout is drained.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Wait waits for the worker's exit and returns exec.Cmd.Wait's error.
func (p *Proc) Wait() error {
	<-p.done
	return p.err
}

// StderrTail returns the last n bytes the worker wrote on stderr (at most 8 KiB are kept),
// after a heading that names it, for failure messages; "" when it wrote nothing.
func (p *Proc) StderrTail(n int) string {
	s := p.stderr.tail(n)
	if s == "" {
		return ""
	}
	return fmt.Sprintf("\n--- worker %s stderr:\n%s", p.ID, s)
}

// tailBuffer is a worker's stderr: written by exec's copying goroutine, read by the driver.
// It keeps the end only, since a worker that runs for minutes (the campaign's soak runs) may
// log without end, and a failure message needs the last lines.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

const tailKeep = 8 << 10

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if b.buf.Len() > 2*tailKeep {
		rest := append([]byte(nil), b.buf.Bytes()[b.buf.Len()-tailKeep:]...)
		b.buf.Reset()
		b.buf.Write(rest)
	}
	return len(p), nil
}

func (b *tailBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return s
}
