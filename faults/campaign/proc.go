package campaign

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

	"github.com/leasehold/leasehold/internal/proctest"
)

// proc is one worker process.
type proc struct {
	id     string
	slot   *slot
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tailBuffer

	// Set by the driver from the worker's lines and its exit.
	ready     bool
	attempts  string // "ok" or "fail" after the first attempt
	paused    bool   // SIGSTOPped and not yet SIGCONTinued
	signalled bool   // the runner sent it SIGKILL or SIGTERM: its exit is expected
	stopped   *proctest.Line
	exited    bool
	err       error
}

// slot is one of the K places an instance runs in: a worker killed or stopped is replaced in
// its slot by a new one (a new instance ID). Each slot has its own proxy to the backend, so a
// partition cuts the instance of that slot only. The timeline has one row per slot.
type slot struct {
	n     int
	gen   int
	url   string
	proxy proxy // nil for a backend without a network
	cur   *proc
}

// proxy is what the campaign needs of internal/tcpproxy.
type proxy interface {
	Addr() string
	Cut()
	Heal()
	Reset()
	Latency(time.Duration)
	Close() error
}

// message is a line a worker wrote on stdout, or its exit (line == "" and exit set).
type message struct {
	p    *proc
	line string
	exit bool
}

// startProc starts a worker for slot s. Its stdout lines and then its exit arrive in the
// inbox. The worker runs in a process group of its own (signals reach it and nothing else),
// dies with the runner (parent-death signal, where the system has one, and stdin's EOF).
func (d *driver) startProc(s *slot) (*proc, error) {
	s.gen++
	p := &proc{id: fmt.Sprintf("w%d.%d", s.n, s.gen), slot: s, stderr: &tailBuffer{}}
	p.cmd = exec.Command(d.exe, d.o.WorkerArgs...)
	p.cmd.Env = append(os.Environ(),
		envInstance+"="+p.id,
		envURL+"="+s.url,
		envLease+"="+d.lease,
		envL+"="+d.o.LeaseDuration.String(),
		envR+"="+d.o.RenewInterval.String(),
		envLog+"="+d.logPath,
		envResource+"="+d.res.addr(),
	)
	p.cmd.SysProcAttr = sysProcAttr()
	p.cmd.Stderr = p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("campaign: start worker %s (%s): %w", p.id, d.exe, err)
	}
	d.procs = append(d.procs, p)
	s.cur = p
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			d.inbox.Put(message{p: p, line: sc.Text()})
		}
		err := p.cmd.Wait()
		d.inbox.Put(message{p: p, exit: true, line: errString(err)})
	}()
	return p, nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// signal sends sig to p's process group.
func (p *proc) signal(sig syscall.Signal) error {
	if p.exited {
		return fmt.Errorf("campaign: worker %s has exited", p.id)
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("campaign: %v to worker %s: %w", sig, p.id, err)
	}
	return nil
}

// tailBuffer keeps the last 8 KiB a worker wrote on stderr, for reports of failures.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if b.buf.Len() > 16<<10 {
		rest := append([]byte(nil), b.buf.Bytes()[b.buf.Len()-8<<10:]...)
		b.buf.Reset()
		b.buf.Write(rest)
	}
	return len(p), nil
}

func (b *tailBuffer) tail() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if len(s) > 4<<10 {
		s = "..." + s[len(s)-4<<10:]
	}
	return s
}
