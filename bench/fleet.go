package main

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/leasehold/leasehold/internal/proctest"
)

// fleet is the worker processes of one system (a leasehold backend or an anchor) electing on
// one lease name. The driver reads their stdout lines (proctest lines, stats lines) through an
// inbox, on its own goroutine only.
type fleet struct {
	ctx   context.Context
	exe   string   // the worker program: this binary, or the test binary
	args  []string // its arguments (the test binary's -test.run=^$)
	env   []string // the system's worker environment
	kind  string   // worker kind
	lease string
	log   string // the shared log (leasehold workers), "" for none
	l, r  time.Duration
	inbox *proctest.Inbox[message]

	procs   []*proc
	started int
	leader  *proc  // from its lead line until its unlead line or its death
	leads   []lead // every lead line, in order
}

type lead struct {
	p *proc
	t int64
}

// proc is one worker process, and what the driver knows of it.
type proc struct {
	*proctest.Proc
	ready     bool
	signalled bool
	exited    bool
	err       error
	last      *proctest.Line // its last lead or renew line
	unlead    *proctest.Line
	stopped   *proctest.Line
	stats     []statsLine
	many      string // a many worker's result line
}

// start starts a worker with extra environment variables; it does not wait for its ready line.
func (f *fleet) start(extra ...string) (*proc, error) {
	f.started++
	p := &proc{}
	var err error
	p.Proc, err = proctest.Start(proctest.Spec{
		Config: proctest.Config{ID: fmt.Sprintf("%s-w%d", f.kind, f.started), Lease: f.lease, LeaseDuration: f.l, RenewInterval: f.r, Log: f.log},
		Path:   f.exe,
		Args:   f.args,
		Env:    append(append([]string{envWorker + "=" + f.kind}, f.env...), extra...),
		Line:   func(line string) { f.inbox.Put(message{p: p, line: line}) },
		Exit:   func(err error) { f.inbox.Put(message{p: p, exit: true, err: err}) },
	})
	if err != nil {
		return nil, err
	}
	f.procs = append(f.procs, p)
	return p, nil
}

// startReady starts n workers and waits for every ready line.
func (f *fleet) startReady(n int, extra ...string) ([]*proc, error) {
	var ps []*proc
	for range n {
		p, err := f.start(extra...)
		if err != nil {
			return ps, err
		}
		ps = append(ps, p)
	}
	err := f.wait(fmt.Sprintf("%d workers ready", n), 60*time.Second+time.Duration(n)*time.Second, func() bool {
		for _, p := range ps {
			if !p.ready {
				return false
			}
		}
		return true
	})
	return ps, err
}

// handle applies one message to the fleet's state.
func (f *fleet) handle(m message) error {
	p := m.p
	if m.exit {
		p.exited, p.err = true, m.err
		if f.leader == p {
			f.leader = nil
		}
		if !p.signalled {
			return fmt.Errorf("bench: worker %s exited unasked (%v)%s", p.ID, m.err, p.StderrTail(2<<10))
		}
		return nil
	}
	switch {
	case strings.HasPrefix(m.line, statsPrefix):
		s, err := parseStats(m.line)
		if err != nil {
			return err
		}
		p.stats = append(p.stats, s)
		return nil
	case strings.HasPrefix(m.line, manyPrefix):
		p.many = strings.TrimPrefix(m.line, manyPrefix)
		return nil
	}
	l, err := proctest.ParseLine(m.line)
	if err != nil || l.Instance != p.ID {
		return fmt.Errorf("bench: worker %s wrote %q on stdout (%v)%s", p.ID, m.line, err, p.StderrTail(2<<10))
	}
	switch l.Kind {
	case proctest.KindReady:
		p.ready = true
	case proctest.KindLead:
		f.leader = p
		f.leads = append(f.leads, lead{p, l.T})
		p.last = &l
	case proctest.KindRenew:
		p.last = &l
	case proctest.KindUnlead:
		if f.leader == p {
			f.leader = nil
		}
		p.unlead = &l
	case proctest.KindStopped:
		p.stopped = &l
	}
	return nil
}

// wait handles messages until cond holds, the timeout passes or the run is interrupted.
func (f *fleet) wait(what string, timeout time.Duration, cond func() bool) error {
	if held, err := f.handleFor(timeout, cond); held || err != nil {
		return err
	}
	return fmt.Errorf("bench: %s %s: no %s within %v%s", f.kind, f.lease, what, timeout, f.stderrs())
}

// pause lets d pass while handling messages: the instant a signal is sent is chosen, it
// waits for nothing that could be waited on.
func (f *fleet) pause(d time.Duration) error {
	_, err := f.handleFor(d, func() bool { return false })
	return err
}

// handleFor handles messages until cond holds (true) or d has passed (false). It stops at a
// message's error or when the run is interrupted.
func (f *fleet) handleFor(d time.Duration, cond func() bool) (bool, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	for !cond() {
		if m, ok := f.inbox.Take(); ok {
			if err := f.handle(m); err != nil {
				return false, err
			}
			continue
		}
		select {
		case <-f.inbox.Notify():
		case <-t.C:
			return false, nil
		case <-f.ctx.Done():
			return false, f.ctx.Err()
		}
	}
	return true, nil
}

// waitLeader waits for a live leader.
func (f *fleet) waitLeader() (*proc, error) {
	err := f.wait("leader", 20*(f.l+f.r), func() bool { return f.leader != nil && !f.leader.signalled })
	return f.leader, err
}

// nextLead waits for a lead line of another worker than old, from the n-th lead line on.
func (f *fleet) nextLead(old *proc, n int) (lead, error) {
	var found lead
	err := f.wait("new leader after "+old.ID, 20*(f.l+f.r), func() bool {
		for _, l := range f.leads[n:] {
			if l.p != old {
				found = l
				return true
			}
		}
		return false
	})
	return found, err
}

// signal sends sig to p, noting that p's exit is expected after SIGKILL or SIGTERM.
func (f *fleet) signal(p *proc, sig syscall.Signal) error {
	p.signalled = p.signalled || sig == syscall.SIGKILL || sig == syscall.SIGTERM
	return p.Signal(sig)
}

// waitExit waits for p's exit.
func (f *fleet) waitExit(p *proc) error {
	return f.wait("exit of "+p.ID, 30*time.Second, func() bool { return p.exited })
}

// stopAll SIGTERMs every live worker and waits for their exits; each must have stopped
// cleanly.
func (f *fleet) stopAll() error {
	var live []*proc
	for _, p := range f.procs {
		if !p.exited && !p.signalled {
			if err := f.signal(p, syscall.SIGTERM); err != nil {
				return err
			}
			live = append(live, p)
		}
	}
	err := f.wait("exit of every worker", 60*time.Second, func() bool {
		for _, p := range live {
			if !p.exited {
				return false
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	for _, p := range live {
		if p.err != nil {
			return fmt.Errorf("bench: worker %s after SIGTERM: %v%s", p.ID, p.err, p.StderrTail(2<<10))
		}
	}
	return nil
}

// close kills every worker still running and waits for them, whatever happened.
func (f *fleet) close() {
	for _, p := range f.procs {
		p.Kill()
	}
	for _, p := range f.procs {
		for !p.exited {
			m := f.inbox.TakeWait()
			m.p.exited = m.p.exited || m.exit
		}
	}
}

// live returns the workers not signalled.
func (f *fleet) live() []*proc {
	var ps []*proc
	for _, p := range f.procs {
		if !p.signalled && !p.exited {
			ps = append(ps, p)
		}
	}
	return ps
}

func (f *fleet) stderrs() string {
	var b strings.Builder
	for _, p := range f.procs {
		if !p.exited || p.err != nil {
			b.WriteString(p.StderrTail(2 << 10))
		}
	}
	return b.String()
}

// message is a line a worker wrote on stdout, or its exit.
type message struct {
	p    *proc
	line string
	exit bool
	err  error
}
