package proctest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// Options configure Run. Zero values take the defaults of the election issue's test.
type Options struct {
	URL           string        // the store every worker opens with store.Open (required)
	LeaseName     string        // default "proctest"
	LeaseDuration time.Duration // L, default 600ms
	RenewInterval time.Duration // R, default 200ms
	// Slack is added to every takeover bound: process scheduling, and the new leader's own
	// read and write. Default DefaultSlack.
	Slack   time.Duration
	Workers int // processes running at any time, default 3
	Rounds  int // each round SIGKILLs the leader, then SIGTERMs the next one; default 3
}

// DefaultSlack is the slack of Options: 100ms covers process scheduling on a loaded two-core
// machine under the race detector, plus the winner's Get and conditional Patch on a local
// store (a few milliseconds, fsync included).
const DefaultSlack = 100 * time.Millisecond

// Takeover is one change of leader provoked by Run, measured on the shared clock.
type Takeover struct {
	Signal   string        // "SIGKILL" or "SIGTERM"
	From, To string        // the instance signalled, and the next leader
	Since    string        // what Took is measured from
	Took     time.Duration // from Since to the new leader's lead line
	Bound    time.Duration // the rule's bound plus the slack
}

func (t Takeover) String() string {
	return fmt.Sprintf("%s %s → %s in %v since %s (bound %v)", t.Signal, t.From, t.To, t.Took.Round(time.Millisecond/10), t.Since, t.Bound)
}

// Run starts o.Workers worker processes (the test binary itself, see MaybeWorker) electing
// a leader over o.URL, then runs o.Rounds rounds of:
//
//   - SIGKILL the leader shortly after one of its renewals; another instance must lead within
//     L + R of the killed leader's last renewal, plus the slack (E6); start a new worker;
//   - SIGTERM the leader; it must stop leading, release the lease and exit 0, and another
//     instance must lead within R of the moment it stopped leading, plus the slack (E7);
//     start a new worker.
//
// Finally it stops every worker with SIGTERM and checks the shared log: leadership intervals
// of different instances never overlap, and the term grows with each new leader. It returns
// the takeovers measured. Every worker is killed when the test ends, whatever happened.
func Run(t testing.TB, o Options) []Takeover {
	t.Helper()
	if o.URL == "" {
		t.Fatal("proctest: Options.URL is empty")
	}
	if o.LeaseName == "" {
		o.LeaseName = "proctest"
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = 600 * time.Millisecond
	}
	if o.RenewInterval == 0 {
		o.RenewInterval = 200 * time.Millisecond
	}
	if o.Slack == 0 {
		o.Slack = DefaultSlack
	}
	if o.Workers == 0 {
		o.Workers = 3
	}
	if o.Rounds == 0 {
		o.Rounds = 3
	}
	seed := rand.Uint64()
	t.Logf("proctest: seed %d, L=%v R=%v slack %v, %d workers, %d rounds", seed, o.LeaseDuration, o.RenewInterval, o.Slack, o.Workers, o.Rounds)
	d := &driver{
		t:       t,
		o:       o,
		log:     filepath.Join(t.TempDir(), "leadership.log"),
		rng:     rand.New(rand.NewPCG(seed, seed)),
		inbox:   NewInbox[message](),
		workers: map[string]*worker{},
		renews:  map[string]int{},
		ready:   map[string]bool{},
		stopped: map[string]*Line{},
		unleads: map[string][]Line{},
	}
	t.Cleanup(d.cleanup)

	for range o.Workers {
		d.start()
	}
	d.wait("a first leader", func() bool { return d.leader != "" })
	var takeovers []Takeover
	for range o.Rounds {
		takeovers = append(takeovers, d.killRound())
		d.start()
		takeovers = append(takeovers, d.termRound())
		d.start()
	}
	for _, w := range d.live() {
		d.terminate(w)
	}
	d.checkLog()
	return takeovers
}

// Failover is a store's multi-process failover test: Run over url with the defaults, three
// workers and three rounds, which must measure every takeover. It is skipped with -short,
// and on Windows, where workers cannot be sent SIGTERM.
func Failover(t *testing.T, url string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts processes and runs for seconds")
	}
	if runtime.GOOS == "windows" {
		t.Skip("signals SIGKILL and SIGTERM to worker processes")
	}
	const rounds = 3
	if tks := Run(t, Options{URL: url, Rounds: rounds}); len(tks) != 2*rounds {
		t.Errorf("%d takeovers measured, want %d", len(tks), 2*rounds)
	}
}

type driver struct {
	t     testing.TB
	o     Options
	log   string
	rng   *rand.Rand
	inbox *Inbox[message]

	workers map[string]*worker
	started int // workers started so far, to name the next one

	// State built from the workers' stdout lines, by observe.
	leader  string            // from the last lead line, until its unlead line
	leads   []Line            // every lead line, in order
	renews  map[string]int    // number of renew lines per instance
	ready   map[string]bool   // ready lines
	stopped map[string]*Line  // stopped lines
	unleads map[string][]Line // unlead lines per instance
}

type worker struct {
	id   string
	p    *Proc
	gone bool // the driver has signalled it
}

// start starts a worker and waits for its ready line.
func (d *driver) start() *worker {
	d.t.Helper()
	d.started++
	w := &worker{id: fmt.Sprintf("w%d", d.started)}
	p, err := Start(Spec{
		Config: Config{ID: w.id, URL: d.o.URL, Lease: d.o.LeaseName, LeaseDuration: d.o.LeaseDuration, RenewInterval: d.o.RenewInterval, Log: d.log},
		Path:   os.Args[0],
		Args:   []string{"-test.run=^$"},
		Line:   func(line string) { d.inbox.Put(message{worker: w.id, text: line}) },
	})
	if err != nil {
		d.t.Fatal(err)
	}
	w.p = p
	d.workers[w.id] = w
	d.wait("worker "+w.id+" ready", func() bool { return d.ready[w.id] })
	return w
}

// killRound SIGKILLs the leader and measures the takeover (E6).
func (d *driver) killRound() Takeover {
	d.t.Helper()
	l, r := d.o.LeaseDuration, d.o.RenewInterval
	old := d.currentLeader()
	d.afterRenewal(old)
	killAt := Now()
	if err := old.p.Signal(syscall.SIGKILL); err != nil {
		d.t.Fatal(err)
	}
	old.gone = true
	next := d.nextLead(old.id, len(d.leads))
	d.waitExit(old)

	// The killed leader's last renewal, from its own log lines: the last write it saw land.
	lines, err := ReadLog(d.log)
	if err != nil {
		d.t.Fatal(err)
	}
	var last *Line
	for i := range lines {
		if lines[i].Instance == old.id && (lines[i].Kind == KindLead || lines[i].Kind == KindRenew) {
			last = &lines[i]
		}
	}
	if last == nil {
		d.t.Fatalf("proctest: no lead or renew line of %s in the log", old.id)
	}
	if killAt < last.T {
		// The driver kills after reading the renewal's line: the clocks disagree.
		d.t.Fatalf("proctest: the kill (%d) precedes the renewal line it followed (%v): the processes do not share Now's clock", killAt, last)
	}
	tk := Takeover{Signal: "SIGKILL", From: old.id, To: next.Instance, Since: "its last renewal", Bound: l + r + d.o.Slack}
	since := last.T
	// The next attempt starts R after the last successful one started (E1). The kill aims
	// well before it, but if it came within 25ms of it (a slow pipe, a late wake-up), a
	// renewal may have landed unlogged before the kill: measure from the kill instead.
	if nextAttempt := last.Deadline - int64((l+r)/2) + int64(r); killAt >= nextAttempt-int64(25*time.Millisecond) {
		since, tk.Since = killAt, "the kill (an attempt may have been in flight)"
	}
	tk.Took = time.Duration(next.T - since)
	if tk.Took > tk.Bound {
		d.t.Errorf("proctest: E6: %s killed %v after its last renewal; %s led %v after %s, more than L+R+slack = %v",
			old.id, time.Duration(killAt-last.T), next.Instance, tk.Took, tk.Since, tk.Bound)
	}
	d.t.Logf("proctest: %v; killed %v after the renewal", tk, time.Duration(killAt-last.T).Round(time.Millisecond/10))
	return tk
}

// termRound SIGTERMs the leader, checks that it stops cleanly, and measures the takeover (E7).
func (d *driver) termRound() Takeover {
	d.t.Helper()
	old := d.currentLeader()
	d.afterRenewal(old)
	n, leads := len(d.unleads[old.id]), len(d.leads)
	d.terminate(old)
	if len(d.unleads[old.id]) != n+1 {
		d.t.Fatalf("proctest: %s: %d unlead lines after SIGTERM, want 1", old.id, len(d.unleads[old.id])-n)
	}
	unlead := d.unleads[old.id][n]
	if unlead.Reason != "stop" {
		d.t.Errorf("proctest: %s stopped leading with reason %q after SIGTERM, want \"stop\": it lost the lease before", old.id, unlead.Reason)
	}
	next := d.nextLead(old.id, leads)
	tk := Takeover{Signal: "SIGTERM", From: old.id, To: next.Instance, Since: "it stopped leading", Took: time.Duration(next.T - unlead.T),
		Bound: d.o.RenewInterval + d.o.Slack}
	if tk.Took > tk.Bound {
		d.t.Errorf("proctest: E7: %s stopped leading on SIGTERM; %s led %v later, more than R+slack = %v", old.id, next.Instance, tk.Took, tk.Bound)
	}
	d.t.Logf("proctest: %v", tk)
	return tk
}

// terminate sends SIGTERM and waits for the worker's stopped line and its exit; Stop must
// have succeeded and the worker exited 0.
func (d *driver) terminate(w *worker) {
	d.t.Helper()
	if err := w.p.Signal(syscall.SIGTERM); err != nil {
		d.t.Fatal(err)
	}
	w.gone = true
	d.wait("worker "+w.id+" stopped", func() bool { return d.stopped[w.id] != nil })
	if s := d.stopped[w.id]; s.Reason != "ok" {
		d.t.Errorf("proctest: %s: Stop: %s", w.id, s.Reason)
	}
	d.waitExit(w)
	if err := w.p.Wait(); err != nil {
		d.t.Errorf("proctest: %s after SIGTERM: %v, want exit status 0%s", w.id, err, w.p.StderrTail(4096))
	}
}

// currentLeader returns the leading worker, waiting for one if none leads.
func (d *driver) currentLeader() *worker {
	d.t.Helper()
	d.wait("a leader", func() bool { return d.leader != "" })
	return d.workers[d.leader]
}

// afterRenewal waits for the next renewal by w, then for a random fraction of R/2: the
// signal falls at a random phase of the followers' attempts, but well before w's next
// attempt, so that the renewal just logged is w's last write. The pause picks an instant; it
// waits for nothing that could be waited on.
func (d *driver) afterRenewal(w *worker) {
	d.t.Helper()
	n := d.renews[w.id]
	d.wait("a renewal by "+w.id, func() bool { return d.renews[w.id] > n })
	if d.leader != w.id {
		d.t.Fatalf("proctest: %s stopped leading during the test's wait: %v", w.id, d.unleads[w.id])
	}
	time.Sleep(time.Duration(d.rng.Int64N(int64(d.o.RenewInterval / 2))))
}

// nextLead waits for a lead line of an instance other than old, from the n-th lead line on.
func (d *driver) nextLead(old string, n int) Line {
	d.t.Helper()
	d.wait("a leader other than "+old, func() bool {
		for _, l := range d.leads[n:] {
			if l.Instance != old {
				return true
			}
		}
		return false
	})
	for _, l := range d.leads[n:] {
		if l.Instance != old {
			return l
		}
	}
	panic("unreachable")
}

// wait handles the workers' stdout lines until cond holds. Its timeout only bounds a test
// that is failing anyway; the timing rules are checked on the lines' timestamps.
func (d *driver) wait(what string, cond func() bool) {
	d.t.Helper()
	timeout := time.NewTimer(20 * (d.o.LeaseDuration + d.o.RenewInterval))
	defer timeout.Stop()
	for !cond() {
		if m, ok := d.inbox.Take(); ok {
			d.observe(m)
			continue
		}
		select {
		case <-d.inbox.Notify():
		case <-timeout.C:
			d.t.Fatalf("proctest: no %s within %v%s", what, 20*(d.o.LeaseDuration+d.o.RenewInterval), d.stderrs())
		}
	}
}

func (d *driver) observe(m message) {
	d.t.Helper()
	l, err := ParseLine(m.text)
	if err != nil || l.Instance != m.worker {
		d.t.Fatalf("proctest: worker %s wrote %q on stdout (%v)%s", m.worker, m.text, err, d.stderrs())
	}
	switch l.Kind {
	case KindReady:
		d.ready[l.Instance] = true
	case KindLead:
		d.leader = l.Instance
		d.leads = append(d.leads, l)
	case KindRenew:
		d.renews[l.Instance]++
	case KindUnlead:
		if d.leader == l.Instance {
			d.leader = ""
		}
		d.unleads[l.Instance] = append(d.unleads[l.Instance], l)
	case KindStopped:
		d.stopped[l.Instance] = &l
	}
}

func (d *driver) waitExit(w *worker) {
	d.t.Helper()
	select {
	case <-w.p.Done():
	case <-time.After(10 * time.Second):
		d.t.Fatalf("proctest: worker %s has not exited 10s after its signal%s", w.id, d.stderrs())
	}
}

// live returns the workers not signalled yet, in start order.
func (d *driver) live() []*worker {
	var ws []*worker
	for i := 1; i <= d.started; i++ {
		if w := d.workers[fmt.Sprintf("w%d", i)]; w != nil && !w.gone {
			ws = append(ws, w)
		}
	}
	return ws
}

// checkLog rebuilds the leadership intervals from the shared log and checks them.
func (d *driver) checkLog() {
	d.t.Helper()
	lines, err := ReadLog(d.log)
	if err != nil {
		d.t.Fatal(err)
	}
	ivs, err := Intervals(lines)
	if err != nil {
		d.t.Fatal(err)
	}
	if want := 1 + 2*d.o.Rounds; len(ivs) < want {
		d.t.Errorf("proctest: %d leadership intervals in the log, want at least %d", len(ivs), want)
	}
	if err := CheckExclusive(ivs); err != nil {
		d.t.Errorf("%v\nintervals:\n%s", err, formatIntervals(ivs))
	}
	// The margins: how long after a killed leader's deadline the next one led (E5 against
	// E6: at least (L-R)/2 in theory), and after a leader stopped leading otherwise.
	var afterKill, afterStop time.Duration = -1, -1
	for i := 1; i < len(ivs); i++ {
		g, m := time.Duration(ivs[i].Start-ivs[i-1].End), &afterStop
		if ivs[i-1].Open {
			m = &afterKill
		}
		if *m < 0 || g < *m {
			*m = g
		}
	}
	d.t.Logf("proctest: %d leadership intervals, none overlapping; smallest gap after a killed leader's deadline %v, after a leader stopped leading %v",
		len(ivs), afterKill.Round(time.Millisecond/10), afterStop.Round(time.Millisecond/10))
}

func formatIntervals(ivs []Interval) string {
	var b bytes.Buffer
	for _, iv := range ivs {
		fmt.Fprintf(&b, "  %v\n", iv)
	}
	return b.String()
}

// stderrs returns the end of every worker's stderr, for failure messages.
func (d *driver) stderrs() string {
	var b bytes.Buffer
	for i := 1; i <= d.started; i++ {
		if w := d.workers[fmt.Sprintf("w%d", i)]; w != nil {
			b.WriteString(w.p.StderrTail(4096))
		}
	}
	return b.String()
}

// cleanup kills every worker still running and waits for it, also when the test failed.
func (d *driver) cleanup() {
	for _, w := range d.workers {
		w.p.Kill()
	}
	for _, w := range d.workers {
		<-w.p.Done()
	}
	if d.t.Failed() {
		d.t.Logf("proctest: shared log %s, workers' stderr:%s", d.log, d.stderrs())
	}
}

// message is one stdout line of a worker.
type message struct{ worker, text string }
