// Package linearize checks that a [store.Store] is linearizable as the election uses it: one
// key as a compare-and-swap register (rules T1, T2 and T7 of docs/design.md). It is the part of
// the conformance suite (package storetest) that needs a library, the linearizability checker
// github.com/anishathalye/porcupine, and so a module of its own: the core module imports only
// the standard library.
//
// A store's tests call [Run] against the real server:
//
//	func TestLinearizable(t *testing.T) {
//		linearize.Run(t, func(t *testing.T) store.Store { return openOnSameTable(t) })
//	}
//
// open is called once per client; each call returns a store on the same data (the same file,
// table, bucket or prefix), with connections of its own when the store has any, as the
// replicas of an application would have. It may return the same store every time.
//
// # What is checked
//
// Clients (8 by default) run operations concurrently on one key: Get, Create, and Patch and
// Delete conditioned on the value the client saw last, every written value new. Each history (a
// key of its own) is checked by porcupine against the sequential specification of the
// register. An answer is modelled as the store package defines it: nil or a sentinel
// (ErrNotFound, ErrExists, ErrConditionFailed) is definite, and must be true of some moment
// between the call and its return; any other error is an unknown outcome, an operation that
// may have taken effect at any moment after its call, or never: its return is put after the
// end of the history, an operation of the model after every definite answer, and the
// operation is linearized before the end where it took effect, or after it, accepting any
// output, where it took none.
//
// The check runs in three phases. In the first, every call has a generous deadline. In the
// second, half the calls have a deadline short enough to cut them at any point of their course
// (20 µs to 3 ms by default, spread evenly on a logarithmic scale), mixed with calls whose
// definite answers show which of the cut calls took effect. The third is the second with the
// clients taking turns, one call at a time, so that a false definite answer cannot pass for
// the effect of a concurrent call.
//
// Besides linearizability, each answer must be one the operation can give (a Get never answers
// ErrExists, no call answers ErrInvalid), a document read must be one a client wrote, and no
// answer may be both definite and unknown (T7): an error holding a sentinel and the context's
// error at once fails the check, whatever its sentinel.
//
// # Failures
//
// For a history that is not linearizable, the failure message shows the smallest illegal
// history found, and names two files written by porcupine's visualization, of that history and
// of the whole one: open them in a browser. They are written under $LEASEHOLD_ARTIFACTS when it
// is set (kept), otherwise under the test's temporary directory (removed when the test ends).
// The smaller history is the whole one cut short after the earliest call that still leaves it
// illegal (the calls in flight at that point become unknown outcomes), without the operations
// that cannot have changed the register whose absence leaves it illegal: its illegality proves
// the whole history's. The operations outside the longest partial linearization porcupine found
// are marked.
package linearize

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store"
)

// Config sizes a check. Zero fields take their defaults.
type Config struct {
	// Clients is the number of concurrent clients (default 8), each with a store from open.
	Clients int
	// Histories, CutHistories and TurnHistories are the numbers of histories of each phase,
	// each on a key of its own (default 10, 40 and 20); Ops, CutOps and TurnOps the numbers of
	// operations of each client in one history of the phase (default 24, 8 and 6). Short
	// histories keep porcupine's search small when many outcomes are unknown.
	Histories, CutHistories, TurnHistories int
	Ops, CutOps, TurnOps                   int
	// MinDeadline and MaxDeadline bound the short deadlines (default 20µs and 3ms).
	MinDeadline, MaxDeadline time.Duration
	// Timeout is the generous deadline (default 10s).
	Timeout time.Duration
	// CheckTimeout bounds porcupine's search on one history (default 30s); a history it could
	// not decide fails the check.
	CheckTimeout time.Duration
}

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Clients, 8)
	def(&c.Histories, 10)
	def(&c.CutHistories, 40)
	def(&c.TurnHistories, 20)
	def(&c.Ops, 24)
	def(&c.CutOps, 8)
	def(&c.TurnOps, 6)
	defDur(&c.MinDeadline, 20*time.Microsecond)
	defDur(&c.MaxDeadline, 3*time.Millisecond)
	defDur(&c.Timeout, 10*time.Second)
	defDur(&c.CheckTimeout, 30*time.Second)
	return c
}

// Run checks the stores open returns with the default configuration, and fails t for every
// rule broken (see the package documentation).
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	RunConfig(t, Config{}, open)
}

// RunConfig is Run with a configuration.
func RunConfig(t *testing.T, cfg Config, open func(t *testing.T) store.Store) {
	t.Helper()
	r := Check(t, cfg, open)
	for _, f := range r.Failures {
		t.Error(f)
	}
	t.Log(r.Summary())
}

// Result is what a check found.
type Result struct {
	// Ops counts the operations run, by kind ("get", "create", "patch", "delete"), and Unknown
	// those of them whose outcome is unknown.
	Ops, Unknown map[string]int
	// Histories is the number of histories checked, Elapsed the time the check took (running
	// the operations, then checking them).
	Histories int
	Elapsed   time.Duration
	// Illegal counts the histories that are not linearizable, Undecided those porcupine could
	// not decide within the configuration's CheckTimeout, Violations the answers that broke a
	// rule by themselves (a definite answer joined with the context's error, a sentinel the
	// operation cannot answer, a document no client wrote).
	Illegal, Undecided, Violations int
	// Unexplained counts the unknown outcomes of calls with the generous deadline, which no
	// deadline cut short; Examples holds the errors of the first few. They break no rule (an
	// unknown outcome is always a true answer), but a store that could tell more should.
	Unexplained int
	Examples    []string
	// Failures holds a message for each illegal or undecided history and each violation (the
	// first ten of each kind, then a count), Artifacts the files written for them.
	Failures  []string
	Artifacts []string
}

// Summary is one line saying what was checked and the verdict.
func (r *Result) Summary() string {
	var total, unknown int
	var kinds []string
	for k := range numKinds {
		n, u := r.Ops[k.String()], r.Unknown[k.String()]
		total += n
		unknown += u
		kinds = append(kinds, fmt.Sprintf("%s %d (%d unknown)", k, n, u))
	}
	verdict := "linearizable"
	if len(r.Failures) > 0 {
		verdict = fmt.Sprintf("FAILED: %d illegal, %d undecided histories, %d violations", r.Illegal, r.Undecided, r.Violations)
	}
	var unexplained string
	if r.Unexplained > 0 {
		unexplained = fmt.Sprintf("; %d unknown outcomes with the generous deadline, such as %s", r.Unexplained, strings.Join(r.Examples, "; "))
	}
	return fmt.Sprintf("linearize: %d operations, %d with unknown outcomes (%s), in %d histories, %v: %s%s",
		total, unknown, strings.Join(kinds, ", "), r.Histories, r.Elapsed.Round(time.Millisecond), verdict, unexplained)
}

// Check runs the check and returns what it found, without failing t: Run reports it. The tests
// of broken stores use it to show which rule each breaks.
func Check(t *testing.T, cfg Config, open func(t *testing.T) store.Store) *Result {
	t.Helper()
	cfg = cfg.withDefaults()
	stores := make([]store.Store, cfg.Clients)
	for i := range stores {
		if stores[i] = open(t); stores[i] == nil {
			t.Fatal("linearize: open returned a nil store")
		}
	}
	c := &checker{t: t, cfg: cfg, stores: stores, start: time.Now(), prefix: fmt.Sprintf("linearize:%016x", rand.Uint64()),
		res: &Result{Ops: map[string]int{}, Unknown: map[string]int{}}}
	var histories []*history
	for i := range cfg.Histories {
		histories = append(histories, c.run(phaseGenerous, i, cfg.Ops))
	}
	for i := range cfg.CutHistories {
		histories = append(histories, c.run(phaseCut, i, cfg.CutOps))
	}
	for i := range cfg.TurnHistories {
		histories = append(histories, c.run(phaseTurns, i, cfg.TurnOps))
	}
	for _, h := range histories {
		c.check(h)
	}
	c.res.Histories = len(histories)
	c.res.Elapsed = time.Since(c.start)
	c.flushViolations()
	return c.res
}

type checker struct {
	t      *testing.T
	cfg    Config
	stores []store.Store
	start  time.Time
	prefix string // of the keys, new for every check: a persistent store may hold older ones

	counter sync.Mutex
	next    int64 // the last value written

	res        *Result
	violations []string
}

// The phases.
const (
	phaseGenerous = "generous" // concurrent calls, generous deadlines
	phaseCut      = "cut"      // concurrent calls, half of them with short deadlines
	// phaseTurns is the cut phase with the clients taking turns, one call at a time: a wrong
	// definite answer cannot pass for the effect of a concurrent call then (a false ErrExists
	// right after a delete, say), only for that of an earlier call cut by its deadline.
	phaseTurns = "turns"
)

// history is the operations of one phase's history, on its own key.
type history struct {
	phase string
	index int
	key   string
	ops   []op
}

// op is one operation as a client ran it.
type op struct {
	client    int
	in        input
	out       output
	call, ret int64 // nanoseconds since the check started
	deadline  time.Duration
	err       error
	violation string // a rule the answer broke by itself
}

// now is the time on the check's clock: monotonic, in nanoseconds.
func (c *checker) now() int64 { return int64(time.Since(c.start)) }

// value returns a value never written before.
func (c *checker) value() int64 {
	c.counter.Lock()
	defer c.counter.Unlock()
	c.next++
	return c.next
}

// run runs one history: every client runs n operations on a new key, starting together.
func (c *checker) run(phase string, index, n int) *history {
	h := &history{phase: phase, index: index, key: fmt.Sprintf("%s:%s:%d", c.prefix, phase, index)}
	perClient := make([][]op, len(c.stores))
	start := make(chan struct{})
	var (
		wg    sync.WaitGroup
		turns *sync.Mutex
	)
	if phase == phaseTurns {
		turns = &sync.Mutex{}
	}
	for i, st := range c.stores {
		wg.Go(func() {
			<-start
			perClient[i] = c.client(i, st, h.key, n, phase != phaseGenerous, turns)
		})
	}
	close(start)
	wg.Wait()
	for _, ops := range perClient {
		h.ops = append(h.ops, ops...)
	}
	return h
}

// client runs one client's operations: each is chosen from what the client saw last, so that
// its conditions hold often enough to race.
// With turns, the client holds it for each call.
func (c *checker) client(id int, st store.Store, key string, n int, cut bool, turns *sync.Mutex) []op {
	rng := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	var (
		ops     []op
		last    int64 // the value the client saw last (0: none)
		unsure  bool  // a failed write says that last is stale
		minLog  = math.Log(float64(c.cfg.MinDeadline))
		spanLog = math.Log(float64(c.cfg.MaxDeadline)) - minLog
	)
	for range n {
		in := c.choose(rng, last, unsure)
		d := time.Duration(0)
		if cut && rng.IntN(2) == 0 {
			d = time.Duration(math.Exp(minLog + rng.Float64()*spanLog))
		}
		if turns != nil {
			turns.Lock()
		}
		o := c.do(st, id, key, in, d)
		if turns != nil {
			turns.Unlock()
		}
		ops = append(ops, o)
		switch {
		case o.out.Res == resUnknown:
			// Guessing that it took effect makes the next conditional write tell.
			if in.Kind != opGet && rng.IntN(2) == 0 {
				last = in.Val
				if in.Kind == opDelete {
					last = 0
				}
			}
		case o.out.Res == resNotFound:
			last, unsure = 0, false
		case o.out.Res == resOK && in.Kind == opGet:
			last, unsure = o.out.Val, false
		case o.out.Res == resOK && in.Kind == opDelete:
			last, unsure = 0, false
		case o.out.Res == resOK:
			last, unsure = in.Val, false
		default:
			unsure = true
		}
	}
	return ops
}

func (c *checker) choose(rng *rand.Rand, last int64, unsure bool) input {
	p := rng.IntN(100)
	if unsure && p < 60 {
		return input{Kind: opGet}
	}
	if last == 0 {
		switch {
		case p < 60:
			return input{Kind: opCreate, Val: c.value()}
		case p < 85:
			return input{Kind: opGet}
		case p < 95:
			// On an absent document: the answer must be ErrNotFound, not a failed condition.
			return input{Kind: opPatch, Cond: c.peek(), Val: c.value()}
		default:
			return input{Kind: opDelete, Cond: c.peek()}
		}
	}
	switch {
	case p < 45:
		return input{Kind: opPatch, Cond: last, Val: c.value()}
	case p < 62:
		return input{Kind: opDelete, Cond: last}
	case p < 87:
		return input{Kind: opGet}
	default:
		return input{Kind: opCreate, Val: c.value()}
	}
}

// peek returns the last value written by any client, a plausible condition.
func (c *checker) peek() int64 {
	c.counter.Lock()
	defer c.counter.Unlock()
	return c.next
}

// do runs one operation with deadline d (0: the generous one) and classifies its answer.
func (c *checker) do(st store.Store, client int, key string, in input, d time.Duration) op {
	timeout := c.cfg.Timeout
	if d > 0 {
		timeout = d
	}
	ctx, cancel := context.WithTimeout(c.t.Context(), timeout)
	defer cancel()
	o := op{client: client, in: in, deadline: d}
	o.call = c.now()
	var doc map[string]any
	switch in.Kind {
	case opGet:
		doc, o.err = st.Get(ctx, key)
	case opCreate:
		o.err = st.Create(ctx, key, map[string]any{"v": in.Val, "client": client})
	case opPatch:
		o.err = st.Patch(ctx, key, map[string]any{"v": in.Val}, &store.Condition{Field: "v", Value: in.Cond})
	case opDelete:
		o.err = st.Delete(ctx, key, &store.Condition{Field: "v", Value: in.Cond})
	}
	o.ret = c.now()
	o.out.Res, o.violation = classify(in.Kind, o.err)
	if o.err == nil && in.Kind == opGet {
		v, ok := doc["v"].(float64)
		if !ok || v != math.Trunc(v) || v <= 0 {
			o.violation = fmt.Sprintf("Get returned a document no client wrote: %v", doc)
			o.out.Res = resUnknown
		}
		o.out.Val = int64(v)
	}
	if o.violation != "" {
		c.violation(fmt.Sprintf("linearize: %s: client %d: %s: %s (deadline %s)", key, client, describe(in, output{Res: resUnknown}),
			o.violation, deadlineText(d)))
	}
	return o
}

func deadlineText(d time.Duration) string {
	if d == 0 {
		return "generous"
	}
	return d.String()
}

// classify returns the model's result for an answer, and the rule the answer breaks by itself,
// if any (the operation then counts as unknown, so that the history is still checked).
func classify(k kind, err error) (result, string) {
	if err == nil {
		return resOK, ""
	}
	var sentinels []error
	for _, s := range []error{store.ErrNotFound, store.ErrExists, store.ErrConditionFailed, store.ErrInvalid} {
		if errors.Is(err, s) {
			sentinels = append(sentinels, s)
		}
	}
	ctxErr := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
	switch {
	case len(sentinels) == 0:
		return resUnknown, ""
	case len(sentinels) > 1:
		return resUnknown, fmt.Sprintf("the answer holds %d sentinels: %v", len(sentinels), err)
	case ctxErr:
		return resUnknown, fmt.Sprintf("T7: the answer is both definite and unknown (a sentinel and the context's error): %v", err)
	}
	var r result
	switch s := sentinels[0]; {
	case s == store.ErrNotFound && k != opCreate:
		r = resNotFound
	case s == store.ErrExists && k == opCreate:
		r = resExists
	case s == store.ErrConditionFailed && (k == opPatch || k == opDelete):
		r = resConditionFailed
	default:
		return resUnknown, fmt.Sprintf("%s cannot answer %v: %v", k, s, err)
	}
	return r, ""
}

// violation records an answer that broke a rule by itself.
func (c *checker) violation(msg string) {
	c.counter.Lock()
	defer c.counter.Unlock()
	c.violations = append(c.violations, msg)
}

func (c *checker) flushViolations() {
	c.res.Violations = len(c.violations)
	for i, v := range c.violations {
		if i == 10 {
			c.res.Failures = append(c.res.Failures, fmt.Sprintf("linearize: and %d more violations", len(c.violations)-10))
			break
		}
		c.res.Failures = append(c.res.Failures, v)
	}
}
