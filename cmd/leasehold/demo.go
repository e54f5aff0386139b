package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/store/memory"
)

const demoUsage = `Usage: leasehold demo [--instances N] [--duration D]

Runs N instances of an election in this process, over an in-memory store, with short timings,
and prints a timeline of who leads. Every few seconds the current leader crashes or stops
cleanly, in turn, and comes back a moment later:

- a crash is simulated by making that instance's store hang from then on: its election can no
  longer renew or release anything, exactly what the other instances see when a process dies,
  and its callbacks stop counting as leading (the crashed process's work is gone). The others
  take over once the lease expires: within L+R.
- a clean stop releases the lease: another instance takes over at its next attempt, within R.

The summary gives the takeovers, the longest time without a leader after each kind of event
against its bound, and the moments with two leaders: measured, at every change of leader and
every 2ms, over every instance's IsLeader (crashed ones included), and over the leader
callbacks. It must be 0; the demo exits 1 otherwise.

Flags:
  --instances N           number of instances (default 3)
  --duration D            how long to run (default 20s)
  --lease-duration D      L (default 1s)
  --renew-interval D      R (default 250ms)
  --every D               time between two crashes or stops of the leader (default 2s)
` + durationNote

func demoCommand(args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	n := fs.Int("instances", 3, "")
	duration := fs.Duration("duration", 20*time.Second, "")
	l := fs.Duration("lease-duration", time.Second, "")
	r := fs.Duration("renew-interval", 250*time.Millisecond, "")
	every := fs.Duration("every", 2*time.Second, "")
	if help, err := parseFlags(fs, args, demoUsage); help || err != nil {
		if help {
			fmt.Fprint(stdout, demoUsage)
		}
		return exitOK, err
	}
	if err := checkFloors(*l, *r, flagTiming); err != nil {
		return 0, badInput(demoUsage, "%v", err)
	}
	switch {
	case fs.NArg() > 0:
		return 0, badInput(demoUsage, "demo takes no arguments, got %q", fs.Arg(0))
	case *n < 2 || *n > 26:
		return 0, badInput(demoUsage, "--instances %d: want 2 to 26", *n)
	case *duration <= 0:
		return 0, badInput(demoUsage, "--duration %v must be positive", *duration)
	case *l <= 0 || *r <= 0 || *r >= *l:
		return 0, badInput(demoUsage, "--renew-interval %v must be positive and less than --lease-duration %v", *r, *l)
	case *every <= 0:
		return 0, badInput(demoUsage, "--every %v must be positive", *every)
	}
	d := &demo{n: *n, duration: *duration, l: *l, r: *r, every: *every, out: stdout, mem: memory.New()}
	if n := d.run(); n > 0 {
		return 0, fmt.Errorf("demo: %d moments with two leaders (see the timeline above)", n)
	}
	return exitOK, nil
}

type demo struct {
	n               int
	duration        time.Duration
	l, r, every     time.Duration
	out             io.Writer
	mem             *memory.Store
	start           time.Time
	samplerInterval time.Duration

	mu       sync.Mutex
	slots    []*demoNode // the current incarnation of each instance
	all      []*demoNode // every incarnation, crashed ones included, until stopped
	incarn   int
	active   int // instances whose leader callback runs, crashed ones excluded
	overlaps int // moments with two leaders

	// The disruption waiting for a new leader, and the takeovers measured.
	pendingKind string // "crash" or "stop", "" when none
	pendingAt   time.Time
	takeovers   map[string]int
	longest     map[string]time.Duration
	noLeader    time.Time // since when nobody leads (zero while someone does)
	longestNone time.Duration

	bg sync.WaitGroup // crashed instances being stopped
}

type demoNode struct {
	name    string
	e       *cluster.Elector
	st      *crashStore
	crashed bool // guarded by demo.mu
	inFn    bool // its leader callback runs and counts (guarded by demo.mu)
}

func (d *demo) since() time.Duration { return time.Since(d.start) }

// printf prints a timeline line; the caller holds d.mu.
func (d *demo) printf(format string, args ...any) {
	fmt.Fprintf(d.out, "%8.3fs  "+format+"\n", append([]any{d.since().Seconds()}, args...)...)
}

// run runs the demo and returns the number of moments with two leaders.
// drop forgets nd, once stopped, among the demo's incarnations.
func (d *demo) drop(nd *demoNode) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if i := slices.Index(d.all, nd); i >= 0 {
		d.all = slices.Delete(d.all, i, i+1)
	}
}

func (d *demo) run() int {
	d.takeovers, d.longest = map[string]int{}, map[string]time.Duration{}
	d.samplerInterval = 2 * time.Millisecond
	fmt.Fprintf(d.out, "leasehold demo: %d instances elect one leader over an in-memory store, for %v.\n", d.n, d.duration)
	fmt.Fprintf(d.out, "Lease duration L = %v, renew interval R = %v: a crashed leader is replaced within L+R = %v,\n", d.l, d.r, d.l+d.r)
	fmt.Fprintf(d.out, "one that stops cleanly within R = %v. Every %v the leader crashes or stops, in turn.\n\n", d.r, d.every)

	d.start = time.Now()
	d.mu.Lock()
	d.noLeader = d.start
	d.slots = make([]*demoNode, d.n)
	for i := range d.slots {
		d.slots[i] = d.newNode(fmt.Sprintf("node-%d", i+1))
	}
	d.mu.Unlock()

	stopSampler := make(chan struct{})
	samplerDone := make(chan struct{})
	go d.sample(stopSampler, samplerDone)

	end := time.NewTimer(d.duration)
	defer end.Stop()
	tick := time.NewTicker(d.every)
	defer tick.Stop()
	var restarts sync.WaitGroup
	crashNext := true
loop:
	for {
		select {
		case <-end.C:
			break loop
		case <-tick.C:
			if d.disrupt(crashNext, &restarts) {
				crashNext = !crashNext
			}
		}
	}

	// The end: let pending restarts happen, stop every instance cleanly, and wait for the
	// crashed ones to be stopped (they release nothing: their store hangs).
	restarts.Wait()
	d.mu.Lock()
	d.printf("end of the demo: stopping every instance")
	slots := append([]*demoNode(nil), d.slots...)
	d.mu.Unlock()
	for _, nd := range slots {
		ctx, cancel := context.WithTimeout(context.Background(), d.l)
		_ = nd.e.Stop(ctx)
		cancel()
	}
	d.bg.Wait()
	close(stopSampler)
	<-samplerDone
	d.summary()
	return d.overlaps
}

// newNode starts a new incarnation of an instance; the caller holds d.mu.
func (d *demo) newNode(name string) *demoNode {
	d.incarn++
	nd := &demoNode{name: name, st: newCrashStore(d.mem)}
	e, err := cluster.NewElector(cluster.ElectorConfig{
		Lock: cluster.NewStoreLock(nd.st), LeaseName: "demo", LeaseDuration: d.l, RenewInterval: d.r,
		InstanceID: fmt.Sprintf("%s#%d", name, d.incarn), Logger: slog.New(slog.DiscardHandler),
		Observer: func(ev cluster.Event) { d.observe(nd, ev) },
	})
	if err != nil {
		panic(err) // the flags were checked
	}
	nd.e = e
	e.WhenLeader(func(context.Context) error {
		d.enter(nd)
		return nil
	}, func() { d.leave(nd) })
	d.all = append(d.all, nd)
	if err := e.Start(context.Background()); err != nil {
		panic(err) // a new Elector starts
	}
	return nd
}

// enter counts an instance's leader callback; two at once is an overlap.
func (d *demo) enter(nd *demoNode) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if nd.crashed || nd.inFn {
		return
	}
	nd.inFn = true
	d.active++
	if d.active > 1 {
		d.overlaps++
		d.printf("!! %s  leads while another instance's callback still runs", nd.name)
	}
}

func (d *demo) leave(nd *demoNode) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if nd.inFn {
		nd.inFn = false
		d.active--
	}
}

// observe prints an instance's leadership changes and measures the takeovers. It runs on the
// instance's election goroutine.
func (d *demo) observe(nd *demoNode, ev cluster.Event) {
	if ev.Kind != cluster.BecameLeader && ev.Kind != cluster.StoppedLeading {
		return
	}
	// Another instance leading at this very moment is an overlap, crashed ones included:
	// their Elector still runs, and must have stopped leading by its deadline (E5) before the
	// lease could be taken over (E6).
	others := 0
	if ev.Kind == cluster.BecameLeader {
		d.mu.Lock()
		all := append([]*demoNode(nil), d.all...)
		d.mu.Unlock()
		for _, o := range all {
			if o != nd && o.e.IsLeader() {
				others++
			}
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if nd.crashed {
		return // a crashed process prints nothing
	}
	now := time.Now()
	switch ev.Kind {
	case cluster.BecameLeader:
		note := ""
		if !d.noLeader.IsZero() {
			gap := now.Sub(d.noLeader)
			d.longestNone = max(d.longestNone, gap)
		}
		if d.pendingKind != "" {
			gap := now.Sub(d.pendingAt)
			bound, name := d.bound(d.pendingKind)
			d.takeovers[d.pendingKind]++
			d.longest[d.pendingKind] = max(d.longest[d.pendingKind], gap)
			note = fmt.Sprintf("  (%v after the %s; bound %s = %v)", gap.Round(time.Millisecond), d.pendingKind, name, bound)
			d.pendingKind = ""
		}
		d.noLeader = time.Time{}
		d.printf("%-7s became leader    term %d%s", nd.name, ev.Term, note)
		if others > 0 {
			d.overlaps++
			d.printf("!! %s became leader while %d other instance(s) still lead", nd.name, others)
		}
	case cluster.StoppedLeading:
		if d.noLeader.IsZero() {
			d.noLeader = now
		}
		d.printf("%-7s stopped leading  term %d (%s)", nd.name, ev.Term, ev.Reason)
	}
}

func (d *demo) bound(kind string) (time.Duration, string) {
	if kind == "crash" {
		return d.l + d.r, "L+R"
	}
	return d.r, "R"
}

// disrupt crashes or stops the current leader, and restarts it a moment later. It reports
// whether there was a leader to disrupt.
func (d *demo) disrupt(crash bool, restarts *sync.WaitGroup) bool {
	d.mu.Lock()
	slot := -1
	for i, nd := range d.slots {
		if nd.inFn && nd.e.IsLeader() {
			slot = i
		}
	}
	if slot < 0 || d.pendingKind != "" {
		d.mu.Unlock()
		return false
	}
	nd := d.slots[slot]
	now := time.Now()
	if crash {
		d.pendingKind, d.pendingAt = "crash", now
		d.printf("%-7s CRASH            (simulated: its store hangs from now on; nothing is released)", nd.name)
		nd.crashed = true
		nd.st.crash()
		if nd.inFn {
			nd.inFn = false // its work died with it
			d.active--
		}
		if d.noLeader.IsZero() {
			d.noLeader = now
		}
		// Its Elector stops leading by itself at its deadline, within (L+R)/2 (E5); stop it
		// after L, once it cannot matter. The stop cannot release anything: its store hangs.
		d.bg.Add(1)
		time.AfterFunc(d.l, func() {
			defer d.bg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), d.r)
			defer cancel()
			_ = nd.e.Stop(ctx)
			d.drop(nd)
		})
		d.mu.Unlock()
	} else {
		d.pendingKind, d.pendingAt = "stop", now
		d.printf("%-7s STOP             (clean: ends its leadership and releases the lease)", nd.name)
		d.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), d.l)
		_ = nd.e.Stop(ctx)
		cancel()
		d.drop(nd)
	}
	// It comes back as a new process would, after a while: it has not seen the lease yet.
	restarts.Add(1)
	time.AfterFunc(d.every*3/4, func() {
		defer restarts.Done()
		d.mu.Lock()
		defer d.mu.Unlock()
		d.slots[slot] = d.newNode(nd.name)
		d.printf("%-7s restarted", nd.name)
	})
	return true
}

// sample counts, every samplerInterval, the instances whose IsLeader is true; more than one is
// an overlap (counted once per episode).
func (d *demo) sample(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(d.samplerInterval)
	defer t.Stop()
	inOverlap := false
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		d.mu.Lock()
		all := append([]*demoNode(nil), d.all...)
		d.mu.Unlock()
		var leaders []string
		for _, nd := range all {
			if nd.e.IsLeader() {
				leaders = append(leaders, nd.e.InstanceID())
			}
		}
		if len(leaders) > 1 && !inOverlap {
			d.mu.Lock()
			d.overlaps++
			d.printf("!! two leaders at once: %v", leaders)
			d.mu.Unlock()
		}
		inOverlap = len(leaders) > 1
	}
}

func (d *demo) summary() {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.out, "\nsummary after %v with %d instances (L = %v, R = %v):\n", d.since().Round(time.Millisecond), d.n, d.l, d.r)
	for _, kind := range []string{"crash", "stop"} {
		bound, name := d.bound(kind)
		what := map[string]string{"crash": "takeovers after a crash:     ", "stop": "takeovers after a clean stop:"}[kind]
		if d.takeovers[kind] == 0 {
			fmt.Fprintf(d.out, "  %s %d\n", what, 0)
			continue
		}
		verdict := "within the bound"
		if d.longest[kind] > bound {
			verdict = fmt.Sprintf("OVER the bound by %v", (d.longest[kind] - bound).Round(time.Millisecond))
		}
		fmt.Fprintf(d.out, "  %s %d, longest time without a leader %v (bound %s = %v: %s)\n",
			what, d.takeovers[kind], d.longest[kind].Round(time.Millisecond), name, bound, verdict)
	}
	fmt.Fprintf(d.out, "  longest time without a leader: %v\n", d.longestNone.Round(time.Millisecond))
	fmt.Fprintf(d.out, "  moments with two leaders:      %d (measured at every change of leader, every %v, and over the leader callbacks)\n",
		d.overlaps, d.samplerInterval)
}
