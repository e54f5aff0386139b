package campaign

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/leasehold/leasehold/internal/proctest"
	"github.com/leasehold/leasehold/internal/tcpproxy"
	"github.com/leasehold/leasehold/store"
)

// Timeouts of the runner's waits. They are not bounds the campaign checks (those are on the
// lines' timestamps): they stop a campaign whose election is stuck, which is a violation.
const (
	settleTimeout = 30 * time.Second // for a leader and every instance's attempts to succeed
	exitTimeout   = 10 * time.Second // for a signalled worker to exit
)

type driver struct {
	ctx     context.Context
	o       Options
	exe     string
	dir     string
	logPath string
	lease   string
	srv     Server
	store   store.Store // the runner's own connection to a networked backend, nil otherwise
	res     *resource
	rng     *rand.Rand
	inbox   *proctest.Inbox[message]
	slots   []*slot
	procs   []*proc // every worker started, in order
	timers  []timer

	// State built from the workers' lines.
	leader  string                     // from a lead line until its unlead line or its exit
	leads   []proctest.Line            // every lead line, in order
	last    map[string]proctest.Line   // each instance's last lead or renew line
	renews  map[string]int             // renew lines per instance
	unleads map[string][]proctest.Line // unlead lines per instance
	asks    []askLine                  // every request to hand over (Ranked), in order
	// owners follows every partition's log in the partitions mode (nil otherwise), and
	// ownersPoll says a wake-up to read them again is scheduled.
	owners     *partitionOwners
	ownersPoll bool

	faults    []Fault
	round     []Kind // the first round's kinds not injected yet (pick)
	roundDone bool
	// unsupported are the kinds the backend turned out not to have (a cluster that cannot
	// fail over on request): pick leaves them out.
	unsupported map[Kind]bool
	problems    []string      // violations found while running (a worker crashed, no leader, ...)
	settleWait  time.Duration // settleTimeout; shorter in tests
	// stalls probes the cluster after the member's fault stallsOf (Fault.N) until the next
	// fault (stall.go).
	stalls   *stallWatch
	stallsOf int
	// keepLogs: the run broke a rule, and cleanup copies its logs into Options.KeepLogs.
	keepLogs bool
}

// testHookDriver, set by tests, sees the driver of each Run before it starts anything.
var testHookDriver func(*driver)

type timer struct {
	at time.Time
	fn func()
}

// Run runs one campaign: it starts the backend and o.Instances workers, injects faults for
// o.Duration (and until o.MinFaults), stops every worker, and checks the shared log and the
// resource's actions. Every process, proxy and temporary file it started is gone when it
// returns, also when ctx is cancelled (Run then returns ctx's error). An error wrapping
// ErrUnavailable means the backend's server is not there.
func Run(ctx context.Context, o Options) (*Report, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if o.Seed == 0 {
		o.Seed = rand.Uint64()
	}
	d := &driver{
		ctx:         ctx,
		o:           o,
		exe:         o.Executable,
		rng:         rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15)),
		inbox:       proctest.NewInbox[message](),
		last:        map[string]proctest.Line{},
		renews:      map[string]int{},
		unleads:     map[string][]proctest.Line{},
		unsupported: map[Kind]bool{},
		lease:       fmt.Sprintf("faults-%s-%d-%d", o.Backend, o.Seed, os.Getpid()),
		settleWait:  settleTimeout,
	}
	if d.exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("campaign: the worker executable: %w", err)
		}
		d.exe = exe
	}
	if testHookDriver != nil {
		testHookDriver(d)
	}
	dir, err := os.MkdirTemp("", "leasehold-faults-")
	if err != nil {
		return nil, err
	}
	d.dir = dir
	d.logPath = filepath.Join(dir, "leadership.log")
	defer d.cleanup()
	if o.Partitions > 0 {
		d.owners = newPartitionOwners(dir, o.Partitions)
	}

	// The backend's and the workers' start runs alone among the campaigns of o.gate, up to
	// the first healthy election; each fault, and the final stop, beside the others.
	release := o.gate.alone()
	defer func() { release() }()
	if d.srv, err = lookupBackend(o.Backend)(ctx, dir); err != nil {
		return nil, fmt.Errorf("campaign: backend %s: %w", o.Backend, err)
	}
	for _, kv := range d.srv.Env {
		k, v, _ := strings.Cut(kv, "=")
		if err := os.Setenv(k, v); err != nil {
			return nil, fmt.Errorf("campaign: backend %s: environment: %w", o.Backend, err)
		}
	}
	if d.srv.network() && !hasLockOpener(d.srv.URL) {
		// Open the store once before the workers: its table, bucket or key space is then in
		// place, and the workers' concurrent first Open does not race to create it (a race
		// that store/postgres loses with SQLSTATE 42710; see store/postgres's
		// regress_faults_test.go). The campaign is about the election under faults.
		if d.store, err = store.Open(ctx, d.srv.URL); err != nil {
			return nil, fmt.Errorf("campaign: backend %s: open the store: %w", o.Backend, err)
		}
	}
	if u, ok := d.srv.Cluster.(recordUser); ok {
		if err := u.useRecord(ctx, d.srv.URL, "cluster:"+d.lease); err != nil {
			return nil, fmt.Errorf("campaign: backend %s: %w", o.Backend, err)
		}
	}
	if d.res, err = startResource(); err != nil {
		return nil, fmt.Errorf("campaign: fenced resource: %w", err)
	}
	for i := 1; i <= o.Instances; i++ {
		s := &slot{n: i}
		var addr string
		d.slots = append(d.slots, s) // before an error: cleanup closes its proxies
		if d.srv.Cluster != nil && d.srv.Direct {
			s.url = d.srv.URL
			continue
		}
		if d.srv.Cluster != nil {
			if err := d.clusterProxies(s); err != nil {
				return nil, err
			}
			continue
		}
		if d.srv.Addr != "" {
			p, err := tcpproxy.New(d.srv.Addr)
			if err != nil {
				return nil, fmt.Errorf("campaign: proxy of instance %d: %w", i, err)
			}
			s.proxy, addr = p, p.Addr()
		}
		if s.url, err = instanceURL(d.srv, addr); err != nil {
			return nil, err
		}
		if d.srv.Via != nil && addr != "" {
			_, s.env = d.srv.Via(addr)
		}
	}
	o.Logf("campaign %s: seed %d, %d instances, L=%v R=%v slack %v, %v and at least %d faults",
		o.Backend, o.Seed, o.Instances, o.LeaseDuration, o.RenewInterval, o.Slack, o.Duration, o.MinFaults)

	start := proctest.Now()
	for _, s := range d.slots {
		if _, err := d.startProc(s); err != nil {
			return nil, err
		}
	}
	if err := d.settle(); err != nil {
		return nil, d.abort(err)
	}
	release()
	release = func() {}
	began := time.Now()
	end := began.Add(o.Duration)
	stopped := ""
	// Every kind of the schedule comes once before the run may end, whatever Duration and
	// MinFaults say: a short run (the CI mode's) still covers every kind.
	for time.Now().Before(end) || len(d.faults) < o.MinFaults || !d.roundOver() {
		if o.MaxDuration > 0 && time.Since(began) >= o.MaxDuration {
			stopped = fmt.Sprintf("reached the maximum duration %v after %d faults", o.MaxDuration, len(d.faults))
			break
		}
		release = o.gate.beside()
		err := d.inject()
		if err == nil {
			err = d.settle()
		}
		release()
		release = func() {}
		if err != nil {
			if d.ctx.Err() != nil {
				return nil, d.abort(err)
			}
			// A stuck election or a cluster that would not come back is a finding: the run
			// ends with its report rather than hanging or giving none.
			if !errors.Is(err, errEndRun) {
				d.problem("the run ended after fault %d: %v", len(d.faults), err)
			}
			stopped = fmt.Sprintf("ended after fault %d: %v", len(d.faults), err)
			break
		}
	}
	if stopped != "" {
		o.Logf("campaign %s: the faults stopped early: %s", o.Backend, stopped)
	}
	release = o.gate.beside()
	d.endStalls()
	d.answering()
	faultsEnd := proctest.Now()
	err = d.stopAll()
	release()
	release = func() {}
	if err != nil {
		if d.ctx.Err() != nil || stopped == "" {
			return nil, d.abort(err)
		}
		d.problem("stopping the workers after the run ended early: %v", err)
	}
	lines, err := proctest.ReadLog(d.logPath)
	if err != nil {
		return nil, err
	}
	rep := analyze(o, d.srv.network(), lines, d.res.Actions(), d.faults, start, faultsEnd, proctest.Now())
	if o.Partitions > 0 {
		parts := make([][]proctest.Line, o.Partitions)
		for p := range parts {
			if parts[p], err = proctest.ReadLog(partitionLog(d.dir, p)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, err
			}
		}
		var vs, tvs []string
		rep.PartitionLeaderships, vs = checkPartitions(parts, d.faults, o.LeaseDuration)
		rep.PartitionTakeovers, tvs = checkPartitionTakeovers(o, parts, d.faults, faultsEnd)
		rep.Violations = append(append(rep.Violations, vs...), tvs...)
	}
	if o.Ranked {
		var vs []string
		rep.Faults, vs = checkRanked(o, lines, d.asks, rep.Faults, faultsEnd)
		rep.Violations = append(rep.Violations, vs...)
		rep.Asks = len(d.asks)
	}
	rep.Violations = append(d.problems, rep.Violations...)
	rep.Stopped = stopped
	if d.srv.Cluster != nil {
		rep.Cluster = d.clusterInfo()
	}
	d.keepLogs = o.KeepLogs != "" && rep.Failed()
	return rep, nil
}

// abort turns a failure of the run into its error: the context's, or the failure with the
// problems seen so far and the workers' stderr.
func (d *driver) abort(err error) error {
	if ctxErr := d.ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var b strings.Builder
	fmt.Fprintf(&b, "campaign %s (seed %d): %v", d.o.Backend, d.o.Seed, err)
	for _, p := range d.problems {
		fmt.Fprintf(&b, "\n  %s", p)
	}
	for _, s := range d.slots {
		if s.cur != nil {
			b.WriteString(s.cur.StderrTail(4 << 10))
		}
	}
	return errors.New(b.String())
}

// wait handles the workers' messages and the timers due until cond holds, for at most
// timeout. It returns the context's error when the campaign is interrupted.
func (d *driver) wait(what string, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		d.fireTimers()
		for {
			m, ok := d.inbox.Take()
			if !ok {
				break
			}
			d.handle(m)
		}
		if cond() {
			return nil
		}
		if err := d.ctx.Err(); err != nil {
			return err
		}
		now := time.Now()
		if !now.Before(deadline) {
			return fmt.Errorf("no %s within %v", what, timeout)
		}
		wake := deadline
		for _, tm := range d.timers {
			if tm.at.Before(wake) {
				wake = tm.at
			}
		}
		t.Reset(wake.Sub(now))
		select {
		case <-d.inbox.Notify():
		case <-t.C:
		case <-d.ctx.Done():
		}
	}
}

// sleep waits for dur, handling messages and timers meanwhile. It picks instants for faults;
// it waits for nothing that could be waited on.
func (d *driver) sleep(dur time.Duration) error {
	end := time.Now().Add(dur)
	d.after(dur, func() {})
	return d.wait("end of a pause", dur+time.Minute, func() bool { return !time.Now().Before(end) })
}

// after schedules fn to run within the driver's waits once dur has passed.
func (d *driver) after(dur time.Duration, fn func()) {
	d.timers = append(d.timers, timer{at: time.Now().Add(dur), fn: fn})
}

func (d *driver) fireTimers() {
	now := time.Now()
	due := slices.DeleteFunc(slices.Clone(d.timers), func(t timer) bool { return t.at.After(now) })
	d.timers = slices.DeleteFunc(d.timers, func(t timer) bool { return !t.at.After(now) })
	for _, t := range due {
		t.fn()
	}
}

func (d *driver) handle(m message) {
	p := m.p
	if p == nil {
		return // a wake-up (see do)
	}
	if m.exit {
		p.exited, p.err = true, m.err
		if d.leader == p.ID {
			d.leader = "" // killed while leading: no unlead line will come
		}
		if !p.signalled {
			rule := "E8: errors from the backend never crash the process"
			if p.Cmd.ProcessState != nil && p.Cmd.ProcessState.ExitCode() == proctest.ExitSetup {
				rule = "it could not start"
			}
			d.problem("worker %s exited on its own (%v; %s)%s%s", p.ID, p.err, rule, p.StderrTail(4<<10), procRace(d.dir, p))
		}
		return
	}
	if w, ok := parseWatchLine(m.line); ok && w.Instance == p.ID {
		p.watch, p.watchAt = w.Fault, w.T
		p.watchAcks++
		return
	}
	if c, ok := parseClockLine(m.line); ok && c.Instance == p.ID {
		p.clock, p.clockAt = c.Offset, c.T
		p.clockAcks++
		return
	}
	if h, ok := parseHealthLine(m.line); ok && h.Instance == p.ID {
		p.failing, p.healthAt = h.Fail, h.T
		p.healthAcks++
		return
	}
	if a, ok := parseAskLine(m.line); ok && a.Instance == p.ID {
		d.asks = append(d.asks, a)
		return
	}
	if a, ok := parseAttemptLine(m.line); ok && a.Instance == p.ID {
		p.attempts = map[bool]string{true: "ok", false: "fail"}[a.OK]
		return
	}
	l, err := proctest.ParseLine(m.line)
	if err != nil || l.Instance != p.ID {
		d.problem("worker %s wrote %q on stdout (%v)", p.ID, m.line, err)
		return
	}
	switch l.Kind {
	case proctest.KindReady:
		p.ready, p.readyAt = true, l.T
	case proctest.KindLead:
		d.leader = l.Instance
		d.leads = append(d.leads, l)
		d.last[l.Instance] = l
	case proctest.KindRenew:
		d.renews[l.Instance]++
		d.last[l.Instance] = l
	case proctest.KindUnlead:
		if d.leader == l.Instance {
			d.leader = ""
		}
		d.unleads[l.Instance] = append(d.unleads[l.Instance], l)
	case proctest.KindStopped:
		p.stopped = &l
	}
}

func (d *driver) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	d.problems = append(d.problems, msg)
	d.o.Logf("campaign %s: VIOLATION: %s", d.o.Backend, msg)
}

// healthy reports whether every slot runs a ready worker whose last attempt succeeded, none
// paused, and one of them leads; in the partitions mode, also whether every partition has an
// owner.
func (d *driver) healthy() bool {
	for _, s := range d.slots {
		p := s.cur
		if p == nil || p.exited || p.signalled || p.paused || !p.ready || p.attempts != "ok" {
			return false
		}
	}
	if d.leader == "" {
		return false
	}
	if d.owners != nil && len(d.owners.unowned(proctest.Now(), d.exited())) > 0 {
		// A claim of a partition but 0 sends the driver no message: look again soon.
		if !d.ownersPoll {
			d.ownersPoll = true
			d.after(20*time.Millisecond, func() { d.ownersPoll = false })
		}
		return false
	}
	return true
}

// exited returns the IDs of the workers that have exited.
func (d *driver) exited() map[string]bool {
	out := make(map[string]bool)
	for _, p := range d.procs {
		if p.exited {
			out[p.ID] = true
		}
	}
	return out
}

// settle waits for a healthy election. Not reaching one within settleTimeout is a violation.
func (d *driver) settle() error {
	what := "healthy election (a leader, every instance's attempts succeeding)"
	if d.owners != nil {
		what = "healthy election (a leader, every instance's attempts succeeding, every partition owned)"
	}
	if err := d.wait(what, d.settleWait, d.healthy); err != nil {
		if d.ctx.Err() != nil {
			return err
		}
		if d.owners != nil {
			if un := d.owners.unowned(proctest.Now(), d.exited()); len(un) > 0 {
				err = fmt.Errorf("%w (partitions without an owner: %v)", err, un)
			}
		}
		d.problem("%v after fault %d", err, len(d.faults))
		return fmt.Errorf("%w: %v", errEndRun, err)
	}
	return nil
}

// leaderProc returns the leading worker.
func (d *driver) leaderProc() *proc {
	for _, s := range d.slots {
		if s.cur != nil && s.cur.ID == d.leader {
			return s.cur
		}
	}
	return nil
}

// restart starts a new worker in p's slot once p has exited.
func (d *driver) restart(p *proc) error {
	if err := d.wait("exit of worker "+p.ID, exitTimeout, func() bool { return p.exited }); err != nil {
		return err
	}
	_, err := d.startProc(p.slot)
	return err
}

// stopAll stops every worker with SIGTERM at once, checks each one stopped cleanly, and
// waits for them to exit.
func (d *driver) stopAll() error {
	var live []*proc
	for _, s := range d.slots {
		if p := s.cur; p != nil && !p.exited {
			if p.paused {
				_ = p.Signal(syscall.SIGCONT)
				p.paused = false
			}
			if err := p.Signal(syscall.SIGTERM); err != nil {
				return err
			}
			p.signalled = true
			live = append(live, p)
		}
	}
	err := d.wait("exit of every worker after SIGTERM", exitTimeout, func() bool {
		for _, p := range live {
			if !p.exited {
				return false
			}
		}
		return true
	})
	for _, p := range live {
		if p.stopped == nil || p.stopped.Reason != "ok" || p.err != nil {
			reason := "no stopped line"
			if p.stopped != nil {
				reason = p.stopped.Reason
			}
			// An exit of 66 after a clean stop is the race detector's: quote its report.
			d.problem("worker %s: clean stop at the end (E7): %s, exit %v%s%s", p.ID, reason, p.err, p.StderrTail(4<<10), procRace(d.dir, p))
		}
	}
	return err
}

// cleanup kills every worker still running (stopped ones too), closes the proxies, the
// resource and the backend, deletes the lease record from a shared server, and removes the
// temporary directory. It runs whatever happened.
func (d *driver) cleanup() {
	if d.stalls != nil {
		d.stalls.stop()
		d.stalls = nil
	}
	for _, p := range d.procs {
		p.Kill()
	}
	// The readers put every exit in the inbox; the processes are dead, so it comes quickly.
	deadline := time.Now().Add(exitTimeout)
	for _, p := range d.procs {
		for !p.exited && time.Now().Before(deadline) {
			if m, ok := d.inbox.Take(); ok {
				if m.exit {
					m.p.exited = true
				}
				continue
			}
			select {
			case <-d.inbox.Notify():
			case <-time.After(time.Until(deadline)):
			}
		}
	}
	for _, s := range d.slots {
		if s.proxy != nil {
			s.proxy.Close()
		}
	}
	if d.res != nil {
		d.res.close()
	}
	if d.store != nil {
		// A shared server keeps the record: delete it, best effort.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = d.store.Delete(ctx, "cluster:"+d.lease, nil)
		cancel()
		_ = store.Close(d.store)
	}
	if d.srv.Close != nil {
		_ = d.srv.Close()
	}
	if d.keepLogs {
		// After the servers stopped: their logs are whole.
		if err := d.copyLogs(d.o.KeepLogs); err != nil {
			d.o.Logf("campaign %s: keeping the logs in %s: %v", d.o.Backend, d.o.KeepLogs, err)
		} else {
			d.o.Logf("campaign %s: logs kept in %s", d.o.Backend, d.o.KeepLogs)
		}
	}
	if os.Getenv("LEASEHOLD_FAULTS_KEEP") == "1" {
		d.o.Logf("campaign %s: logs kept in %s", d.o.Backend, d.dir)
		return
	}
	_ = os.RemoveAll(d.dir)
}

// copyLogs copies every *.log file of the campaign's directory into dir, at the same relative
// paths, and writes the end of each worker's stderr into dir/workers.log.
func (d *driver) copyLogs(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var workers strings.Builder
	for _, p := range d.procs {
		workers.WriteString(p.StderrTail(64 << 10))
	}
	if err := os.WriteFile(filepath.Join(dir, "workers.log"), []byte(workers.String()), 0o644); err != nil {
		return err
	}
	return filepath.WalkDir(d.dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(e.Name(), ".log") {
			return err
		}
		rel, err := filepath.Rel(d.dir, path)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		to := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
}
