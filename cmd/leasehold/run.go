//go:build unix

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/supervise"
	"github.com/leasehold/leasehold/internal/leaseconf"
	leaseholdprom "github.com/leasehold/leasehold/metrics/prometheus"
	"github.com/leasehold/leasehold/store/driver"
)

const runUsage = `Usage: leasehold run [flags] -- CMD [ARGS...]

Joins the election of the lease and runs CMD while this instance leads, with LEASEHOLD_LEASE,
LEASEHOLD_INSTANCE_ID, LEASEHOLD_TERM and LEASEHOLD_SLOT in its environment. CMD runs in a process group of
its own under a keeper, a second leasehold process that answers for CMD's process tree: on
Linux every process CMD starts, however it detaches (double fork, setsid); elsewhere CMD's
process group.

- Leadership ends: the tree gets SIGTERM, then SIGKILL after the grace. leasehold reports CMD
  stopped only once no process of the tree is left: it is gone before another instance can
  lead.
- CMD exits by itself: what is left of its tree gets SIGTERM, then SIGKILL after the grace;
  then leasehold releases the lease and exits with CMD's status (with --restart, it runs CMD
  again while still leading, after a back-off of 100ms doubling up to 30s).
- SIGINT or SIGTERM to leasehold: sent to the tree; once the tree is gone (SIGKILL at the end
  of the grace) the lease is released and leasehold exits 0. SIGHUP, SIGUSR1, SIGUSR2 and
  SIGWINCH are forwarded to CMD's group.
- leasehold killed (SIGKILL, OOM): the keeper SIGKILLs the tree at once. The keeper killed:
  CMD dies with it (Linux) and leasehold kills the rest of the tree, as if CMD had exited.
- A CMD that cannot be found or is not executable is refused at start-up (exit 2), before
  joining the election.
- --try, --wait D: give up instead of waiting to lead; leasehold then exits 75 (EX_TEMPFAIL)
  when another instance holds the lease, 1 when the store did not answer. --try gives up on a
  live holder: once the record changes after its first read (the holder renews it every R), or
  another instance wrote it first (a lost race): within about R. leasehold never judges a
  holder dead by the record's timestamps: a record left unchanged for the holder's lease
  duration is a crashed holder's, and --try takes it over and runs CMD, within L+R of its start.
  --wait gives up at D. Once this instance has led, it stays in the election as without them.
- --priority N: a follower of a higher priority than the holder asks it to hand over once it
  has been a candidate for the stability window without interruption (without leading,
  failing its check or restarting); CMD moves as on leasehold resign: the holder's CMD is
  gone before the next one starts.
- --health-cmd CMD, --health-url URL: a health check, run at start and then every R. A leader
  whose last --health-failures checks failed hands over to the first healthy candidate that
  asks, whatever its priority; a candidate whose last check failed takes a free lease only as
  a last resort (a crashed leader's R after a healthy one would, a released one L + R after
  it saw it free). When every candidate fails its check, the leader keeps leading and its CMD
  runs on.
- --hold-at-least D: once CMD has exited by itself, the lease is kept (renewed) until D has
  passed since CMD started, then released; leasehold then exits with CMD's status. No other
  instance runs CMD, and a --try gives up, in that window. SIGINT or SIGTERM ends it early:
  the lease is released at once, and the exit status is still CMD's.
- --holders N: up to N instances lead at once, each holding one of N slots, records NAME/0 to
  NAME/N-1, each with its own term; LEASEHOLD_SLOT says which (0-based). An instance holds
  one slot at a time and takes a free one within the renew interval, an expired one as a
  lease of its own. With 1 (the default) the record is NAME, as without it. With --config,
  the slots use the cluster service's lease, parameters and Registry. Not with --try or
  --wait, nor with the priority and health flags: no slot is handed over for them.
- --partitions K: a partitioned election of K partitions, records NAME/0 to NAME/K-1, each a
  lease of its own with its own term, spread evenly over the live instances (the roster
  NAME.members); leasehold runs one CMD per partition this instance owns, with
  LEASEHOLD_PARTITION (0-based) and that partition's LEASEHOLD_TERM, each as a leader's CMD:
  when its ownership ends (the partition handed over to a member that joined, at most
  --max-moves per renew interval), its tree gets SIGTERM, then SIGKILL after the grace, and is
  gone before another instance can own the partition. A CMD that exits by itself ends
  leasehold as a leader's does: the other CMDs are stopped, the partitions released, and
  leasehold exits with its status (with --restart, it runs again while the partition is
  owned). SIGINT or SIGTERM stops every CMD, then releases the partitions; exit 0. A stopped
  instance's partitions are owned again within R, a crashed one's within L + R. Works over a
  store (--store, or --config with a store cluster service) and over Kubernetes Leases
  (--config with a Kubernetes cluster service, whose Role also needs list and delete on
  Leases). Not with --holders, --try, --wait, --advertise, --hold-at-least, --metrics-addr,
  nor the priority and health flags.

Flags:
  --grace D               time CMD has to stop after SIGTERM, before SIGKILL; at most, and by
                          default, the lease's safety margin (L-R)/2 minus a tenth of it
                          (4.5s with the default L and R)
  --restart               run CMD again when it exits while this instance still leads
  --try                   give up (exit 75) when a live instance holds the lease; take over
                          one left by a crashed holder
  --wait D                wait at most D to lead, then give up (exit 75) as --try does
  --hold-at-least D       keep the lease until D after CMD started, even if CMD exits sooner
                          (not with --restart)
  --holders N             let up to N instances lead at once, one slot each (default 1)
  --partitions K          split the lease into K partitions spread over the instances, and
                          run one CMD per partition this instance owns
  --max-moves M           with --partitions, how many partitions an instance hands over per
                          renew interval at most (default 1)
  --advertise VALUE       publish VALUE (an address) while this instance leads: read it with
                          leasehold leader; at most 1024 bytes, one line
  --priority N            this instance's rank among the candidates: a 32-bit integer,
                          negative allowed (default 0)
  --stability-window D    how long a candidate of a higher priority than the holder waits
                          before it asks it to hand over (default 3 × the lease duration)
  --health-cmd CMD        health check: a shell command (sh -c), healthy when it exits 0;
                          the check's process group is killed at its timeout
  --health-url HTTP-URL   health check: a GET of an http or https URL, healthy on a 2xx
                          status (not with --health-cmd)
  --health-timeout D      time each check may take (default, and at most, the renew interval)
  --health-failures N     checks in a row that must fail before the leader hands over
                          (default 3)
  --metrics-addr ADDR     serve /metrics (Prometheus), /healthz and /status on ADDR
                          (e.g. :9090, or 127.0.0.1:0 for any free port, logged at start)
` + commonFlagsUsage

// maxGrace is the longest grace CMD may get: the lease's safety margin (L-R)/2 minus a tenth
// of it. A leader stops leading at the latest (L+R)/2
// after its last successful attempt started (E5), and no other instance can take over before
// L after that (E6): CMD must be gone within that gap of (L-R)/2; the tenth left is for
// signal delivery, reaping and clock drift.
func maxGrace(l, r time.Duration) time.Duration {
	m := (l - r) / 2
	return m - m/10
}

// runOptions are run's flags, parsed and checked against each other.
type runOptions struct {
	flags       commonFlags
	grace       time.Duration
	restart     bool
	metricsAddr string
	try         bool
	wait        time.Duration
	holdAtLeast time.Duration
	holders     int
	partitions  int
	maxMoves    int
	cmd         []string // CMD and its arguments, after --
}

func runCommand(args []string, stdout, stderr io.Writer) (int, error) {
	o, err := parseRunOptions(args, stdout)
	if o == nil || err != nil {
		return exitOK, err // --help, or bad input
	}
	handleSIGPIPE()
	log := o.flags.logger(stderr)
	if u, err := url.Parse(o.flags.store); err == nil && u.Scheme == "mem" {
		log.Warn("leasehold: a mem:// store is local to this process: every leasehold process elects itself; use a shared store")
	}
	if o.partitions > 0 {
		return runPartitions(&o.flags, o.partitions, o.maxMoves, o.grace, o.flags.set["grace"], o.restart, o.cmd, log)
	}
	r, err := startRun(o, log)
	if err != nil {
		return 0, err
	}
	defer r.close()
	return r.loop(), nil
}

// parseRunOptions parses run's flags and refuses every combination that cannot work, before
// anything connects to a store. It returns nil options and a nil error for --help.
func parseRunOptions(args []string, stdout io.Writer) (*runOptions, error) {
	o := &runOptions{}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	f := &o.flags
	f.register(fs)
	fs.DurationVar(&o.grace, "grace", 0, "")
	fs.BoolVar(&o.restart, "restart", false, "")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "")
	fs.BoolVar(&o.try, "try", false, "")
	fs.DurationVar(&o.wait, "wait", 0, "")
	fs.DurationVar(&o.holdAtLeast, "hold-at-least", 0, "")
	fs.IntVar(&o.holders, "holders", 1, "")
	fs.IntVar(&o.partitions, "partitions", 0, "")
	fs.IntVar(&o.maxMoves, "max-moves", 0, "")
	fs.StringVar(&f.advertise, "advertise", "", "")
	f.registerRank(fs)
	if help, err := parseFlags(fs, args, runUsage); help || err != nil {
		if help {
			fmt.Fprint(stdout, runUsage)
		}
		return nil, err
	}
	// flag stops at "--" and drops it: CMD must come after one.
	rest := fs.Args()
	if i := len(args) - len(rest) - 1; i < 0 || args[i] != "--" {
		if len(rest) > 0 {
			return nil, badInput(runUsage, "missing -- before the command %q", rest[0])
		}
		return nil, badInput(runUsage, "missing -- CMD [ARGS...]: the command to run while leading")
	}
	if len(rest) == 0 {
		return nil, badInput(runUsage, "missing the command after --")
	}
	o.cmd = rest
	if err := f.validate(fs, runUsage); err != nil {
		return nil, err
	}
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "grace", "wait", "hold-at-least", "advertise":
			f.set[fl.Name] = true
		}
	})
	if err := o.check(fs); err != nil {
		return nil, err
	}
	return o, nil
}

// check refuses flags that are out of range or that contradict each other.
func (o *runOptions) check(fs *flag.FlagSet) error {
	f := &o.flags
	if f.set["grace"] && o.grace <= 0 {
		return badInput(runUsage, "--grace %v must be positive", o.grace)
	}
	if f.set["wait"] && o.wait <= 0 {
		return badInput(runUsage, "--wait %v must be positive (--try gives up without a wait of its own)", o.wait)
	}
	if o.try && f.set["wait"] {
		return badInput(runUsage, "--try and --wait cannot be used together: --try gives up on a live holder, --wait after D")
	}
	if f.set["hold-at-least"] && o.holdAtLeast <= 0 {
		return badInput(runUsage, "--hold-at-least %v must be positive", o.holdAtLeast)
	}
	if f.set["hold-at-least"] && o.restart {
		return badInput(runUsage, "--hold-at-least and --restart cannot be used together: with --restart CMD never finishes")
	}
	if err := leaseconf.CheckValue("--advertise", f.advertise); err != nil {
		return badInput(runUsage, "%v", err)
	}
	if err := f.validateRank(runUsage); err != nil {
		return err
	}
	if err := o.checkHolders(); err != nil {
		return err
	}
	if err := checkPartitionsFlags(fs, o.partitions, o.maxMoves); err != nil {
		return err
	}
	if o.metricsAddr != "" {
		if _, _, err := net.SplitHostPort(o.metricsAddr); err != nil {
			return badInput(runUsage, "--metrics-addr %q: %v", o.metricsAddr, err)
		}
	}
	// With --store, L and R are known now: check the grace before connecting to anything.
	if f.config == "" && f.set["grace"] && o.grace > maxGrace(f.leaseDuration, f.renewInterval) {
		return graceError(o.grace, f.leaseDuration, f.renewInterval)
	}
	// A CMD that cannot run is refused on every instance, before it joins the election, rather
	// than found out by the one that leads (the keeper looks it up again when it starts it).
	if _, err := exec.LookPath(o.cmd[0]); err != nil {
		return badInput(runUsage, "cannot run CMD: %v", err)
	}
	return nil
}

func (o *runOptions) checkHolders() error {
	if o.holders < 1 {
		return badInput(runUsage, "--holders %d must be at least 1", o.holders)
	}
	if o.holders == 1 {
		return nil
	}
	if o.try || o.flags.set["wait"] {
		return badInput(runUsage, "--holders %d cannot be used with --try or --wait", o.holders)
	}
	// The slots of a lease of N holders are taken as they free up: no candidate asks a
	// slot's holder to hand over, for its priority or its health.
	for _, name := range []string{"priority", "stability-window", "health-cmd", "health-url", "health-timeout", "health-failures"} {
		if o.flags.set[name] {
			return badInput(runUsage, "--%s cannot be used with --holders %d: no slot of a lease of N holders is handed over for a priority or a health check", name, o.holders)
		}
	}
	return nil
}

// runningCommand is a run joined to its election: the election, CMD's supervisor, and what
// the loop waits on.
type runningCommand struct {
	o       *runOptions
	log     *slog.Logger
	el      *election
	sup     *supervise.Supervisor
	cand    *candidacy
	sigs    chan os.Signal
	cleanup []func()
}

// startRun builds the election and CMD's supervisor, serves the metrics when asked, and joins
// the election. On an error, whatever it started is stopped.
func startRun(o *runOptions, log *slog.Logger) (_ *runningCommand, err error) {
	ctx := context.Background()
	r := &runningCommand{o: o, log: log, cand: newCandidacy()}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	collector := leaseholdprom.NewCollector()
	var view *electionView
	observer := cluster.Observers(collector.Observe, func(ev cluster.Event) { view.observe(ev) }, r.cand.observe)
	if o.holders > 1 {
		r.el, err = newHoldersElection(ctx, &o.flags, o.holders, log, observer, runUsage)
	} else {
		r.el, err = newElection(ctx, &o.flags, log, observer, runUsage)
	}
	if err != nil {
		return nil, err
	}
	el := r.el
	stopOnError := func() { _ = el.stop(ctx) }
	view = newElectionView(el)
	collector.Init(el.lease)

	limit := maxGrace(el.l, el.r)
	if !o.flags.set["grace"] {
		o.grace = limit
	} else if o.grace > limit {
		stopOnError()
		return nil, graceError(o.grace, el.l, el.r)
	}

	r.sup = supervise.New(supervise.Config{
		Argv: o.cmd, Env: cmdEnviron(el.urlEnv), Lease: el.lease, ID: el.id, Grace: o.grace,
		Restart: o.restart, Hold: o.holdAtLeast, Reaper: supervise.BecomeSubreaper(log), Log: log,
	})
	el.WhenLeader(func(ctx context.Context) error {
		if !r.cand.lead() {
			return nil
		}
		return r.sup.Lead(ctx)
	}, nil)

	r.sigs = make(chan os.Signal, 8)
	supervise.NotifySignals(r.sigs)
	r.cleanup = append(r.cleanup, func() { signal.Stop(r.sigs) })

	if o.metricsAddr != "" {
		ln, err := net.Listen("tcp", o.metricsAddr)
		if err != nil {
			stopOnError()
			return nil, fmt.Errorf("--metrics-addr: %w", err)
		}
		r.cleanup = append(r.cleanup, serveMetrics(ln, collector, view, func() cmdView { return cmdView(r.sup.State()) }))
		log.Info("leasehold: serving /metrics, /healthz and /status", "addr", ln.Addr().String())
	}

	if err := el.start(ctx); err != nil {
		stopOnError()
		return nil, fmt.Errorf("start the election: %w", err)
	}
	log.Info("leasehold: joined the election", "lease", el.lease, "instance", el.id, "store", el.where,
		"leaseDuration", el.l, "renewInterval", el.r, "grace", o.grace, "holders", o.holders)
	return r, nil
}

// close undoes what startRun set up besides the election, in reverse order.
func (r *runningCommand) close() {
	for i := len(r.cleanup) - 1; i >= 0; i-- {
		r.cleanup[i]()
	}
	r.cleanup = nil
}

// loop waits for what ends the run (a signal, CMD's exit, --try or --wait giving up) and
// returns leasehold's exit status once the election has ended.
func (r *runningCommand) loop() int {
	o, el, sup, log := r.o, r.el, r.sup, r.log
	var decided <-chan struct{} // --try: a live holder seen, or no answer from the store
	if o.try {
		decided = r.cand.decided
	}
	var waitEnd <-chan time.Time // --wait: its end
	if o.wait > 0 {
		t := time.NewTimer(o.wait)
		defer t.Stop()
		waitEnd = t.C
	}
	for {
		select {
		case <-decided:
			decided = nil
			if a, ok := r.cand.giveUp(); ok {
				return giveUp(el, o.grace, log, a, "--try")
			}
		case <-waitEnd:
			if a, ok := r.cand.giveUp(); ok {
				return giveUp(el, o.grace, log, a, "--wait "+o.wait.String())
			}
		case sig := <-r.sigs:
			if !supervise.IsStopSignal(sig) {
				sup.Forward(sig)
				continue
			}
			sup.SetStopSignal(sig)
			log.Info("leasehold: stopping", "signal", sig)
			if err := stopElection(el, o.grace); err != nil {
				log.Error("leasehold: stop", "error", err)
				return exitFailure
			}
			if status, ok := sup.HeldStatus(); ok {
				return status // CMD had finished: the stop only cut the hold short
			}
			return exitOK
		case status := <-sup.Exited():
			log.Info("leasehold: CMD exited by itself: releasing the lease", "status", status)
			if err := stopElection(el, o.grace); err != nil {
				log.Error("leasehold: stop", "error", err)
				if status == 0 {
					status = exitFailure
				}
			}
			return status
		}
	}
}

// giveUp ends the election of a command that gave up leading (C5) and returns its exit
// status: exitBusy when the last answer was another instance holding the lease, exitFailure
// when the store did not answer. It never led, or its CMD never started (candidacy.lead), so
// there is no CMD to stop; a lease the attempt in flight took is released.
func giveUp(el *election, grace time.Duration, log *slog.Logger, a attemptAnswer, why string) int {
	code := exitBusy
	switch a.kind {
	case heldByOther:
		if a.holder != "" {
			log.Info("leasehold: another instance holds the lease: giving up", "by", why, "holder", a.holder, "term", a.term, "status", code)
		} else {
			log.Info("leasehold: another instance took the lease first: giving up", "by", why, "error", a.err, "status", code)
		}
	case noAnswer:
		code = exitFailure
		var msg string
		if a.err != nil {
			msg = explain(oneLine(a.err.Error()))
		}
		if unreadableRecord(a.err) {
			log.Error("leasehold: the lease record is unreadable: giving up; run leasehold repair to replace it",
				"by", why, "key", storeDocs.Key(el.lease), "error", msg, "status", code)
			break
		}
		log.Error("leasehold: the store did not answer: giving up", "by", why, "reason", a.reason, "error", msg, "status", code)
	default:
		code = exitFailure
		log.Error("leasehold: no attempt has ended: giving up", "by", why, "status", code)
	}
	if err := stopElection(el, grace); err != nil {
		log.Error("leasehold: stop", "error", err)
		return exitFailure
	}
	return code
}

// unreadableRecord reports whether err, an attempt's error, is the store's answer that the
// lease record cannot be read: its bytes are not a JSON object, or its fields are not a lease
// record's (cluster's decoding error, which has no sentinel: recognized by its text). The
// store did answer: leasehold repair replaces such a record.
func unreadableRecord(err error) bool {
	return err != nil && (errors.Is(err, driver.ErrNotObject) || strings.Contains(err.Error(), "cluster: lease record "))
}

func graceError(grace, l, r time.Duration) error {
	return badInput(runUsage, "--grace %v exceeds the lease's safety margin: at most %v with a lease duration of %v and a renew interval of %v ((L-R)/2 minus a tenth)",
		grace, maxGrace(l, r), l, r)
}

// stopElection ends the election (E7): CMD is stopped through the end of its leadership, then
// the lease is released. The bound leaves CMD its grace, a moment to be reaped, and L-R for
// the release; past it the lease is not released and expires by itself.
func stopElection(el *election, grace time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), grace+2*time.Second+(el.l-el.r))
	defer cancel()
	return el.stop(ctx)
}

// cmdEnviron is leasehold's environment less LEASEHOLD_STORE and urlEnv (the variable the
// configuration's Registry reads its URL from, when not ""): the store's URL may carry its
// password, which CMD has no use for.
func cmdEnviron(urlEnv string) []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, storeEnv+"=") || urlEnv != "" && strings.HasPrefix(kv, urlEnv+"=")
	})
}

// handleSIGPIPE keeps a write to a broken pipe from killing leasehold (`leasehold run ... 2>&1
// | head`): the write fails with EPIPE, and leasehold goes on, stops CMD and releases the
// lease. Without Notify, Go's runtime dies of SIGPIPE on such a write to stdout or stderr.
// signal.Ignore would do it too, but an ignored signal stays ignored across exec: the keeper
// and CMD would inherit it.
func handleSIGPIPE() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}
