package proctest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/store"
)

// The driver tells a worker what to do through these environment variables; envInstance
// being set is what makes the test binary a worker.
const (
	envInstance = "LEASEHOLD_PROCTEST_INSTANCE"
	envURL      = "LEASEHOLD_PROCTEST_URL"
	envLease    = "LEASEHOLD_PROCTEST_LEASE"
	envL        = "LEASEHOLD_PROCTEST_LEASE_DURATION"
	envR        = "LEASEHOLD_PROCTEST_RENEW_INTERVAL"
	envLog      = "LEASEHOLD_PROCTEST_LOG"
)

// Exit codes of a worker.
const (
	exitStopped   = 0 // SIGTERM, and Stop released the lease
	exitStopError = 1 // SIGTERM, and Stop returned an error
	exitSetup     = 2 // bad environment, store or log file
	exitOrphaned  = 3 // the driver went away (stdin closed)
	exitLogWrite  = 4 // a line could not be written: the log would be incomplete
)

// MaybeWorker runs the worker and exits when the environment says this process is one (Run
// sets it); otherwise it returns at once. Call it first in TestMain, in a test package that
// imports the store backend the worker must open.
//
// The worker opens the store with store.Open, runs a cluster.Elector over
// cluster.NewStoreLock of it, and reports each leadership event on stdout and in the shared
// log. On SIGTERM it calls Stop, bounded by the lease duration, and exits 0 when Stop
// succeeds. When its stdin closes (the driver died) it exits at once, so no worker outlives
// its test.
func MaybeWorker() {
	id := os.Getenv(envInstance)
	if id == "" {
		return
	}
	os.Exit(runWorker(id))
}

func runWorker(id string) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "proctest worker %s: %s\n", id, fmt.Sprintf(format, args...))
		return exitSetup
	}
	if strings.ContainsAny(id, " \n") {
		return fail("%s %q holds a space or a newline", envInstance, id)
	}
	l, err := time.ParseDuration(os.Getenv(envL))
	if err != nil {
		return fail("%s: %v", envL, err)
	}
	r, err := time.ParseDuration(os.Getenv(envR))
	if err != nil {
		return fail("%s: %v", envR, err)
	}
	logf, err := os.OpenFile(os.Getenv(envLog), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fail("%s: %v", envLog, err)
	}
	defer logf.Close()

	ctx := context.Background()
	s, err := store.Open(ctx, os.Getenv(envURL))
	if err != nil {
		return fail("%s: %v", envURL, err)
	}
	defer store.Close(s)

	rec := &recorder{id: id, half: (l + r) / 2, log: logf}
	el, err := cluster.NewElector(cluster.ElectorConfig{
		Lock:          cluster.NewStoreLock(s),
		LeaseName:     os.Getenv(envLease),
		LeaseDuration: l,
		RenewInterval: r,
		InstanceID:    id,
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, nil)),
		Observer:      rec.observe,
	})
	if err != nil {
		return fail("%v", err)
	}

	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() {
		// Stdin is a pipe from the driver, never written to: EOF means the driver is gone.
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(exitOrphaned)
	}()
	if err := el.Start(ctx); err != nil {
		return fail("%v", err)
	}
	rec.stdout(Line{Instance: id, Kind: KindReady, T: Now()})

	<-term
	stopCtx, cancel := context.WithTimeout(ctx, l)
	defer cancel()
	if err := el.Stop(stopCtx); err != nil {
		rec.stdout(Line{Instance: id, Kind: KindStopped, T: Now(), Reason: err.Error()})
		return exitStopError
	}
	rec.stdout(Line{Instance: id, Kind: KindStopped, T: Now(), Reason: "ok"})
	return exitStopped
}

// recorder turns the Elector's events into lines. observe runs on the election goroutine,
// one event at a time, so its fields need no lock.
type recorder struct {
	id   string
	half time.Duration // (L+R)/2
	log  *os.File

	leading  bool
	term     uint64
	deadline int64 // of the last successful attempt
}

func (w *recorder) observe(ev cluster.Event) {
	switch ev.Kind {
	case cluster.AttemptSucceeded:
		// The attempt started ev.Duration before its answer; ev.Time is a little after the
		// answer, so this start (and the deadline) can only be late, never early.
		t := at(ev.Time)
		w.deadline = t - int64(ev.Duration) + int64(w.half)
		// The Elector reports a follower's attempt after it has stopped leading, and a new
		// leadership after this event: leading with the same term means a renewal.
		if w.leading && ev.Term == w.term {
			w.write(Line{Instance: w.id, Kind: KindRenew, Term: ev.Term, T: t, Deadline: w.deadline})
		}
	case cluster.BecameLeader:
		w.leading, w.term = true, ev.Term
		w.write(Line{Instance: w.id, Kind: KindLead, Term: ev.Term, T: at(ev.Time), Deadline: w.deadline})
	case cluster.StoppedLeading:
		w.leading = false
		w.write(Line{Instance: w.id, Kind: KindUnlead, Term: ev.Term, T: at(ev.Time), Reason: ev.Reason})
	}
}

// write appends l to the shared log with one O_APPEND write, so that lines of different
// processes never interleave, then reports it on stdout.
func (w *recorder) write(l Line) {
	if _, err := w.log.WriteString(l.String() + "\n"); err != nil {
		fmt.Fprintf(os.Stderr, "proctest worker %s: log: %v\n", w.id, err)
		os.Exit(exitLogWrite)
	}
	w.stdout(l)
}

func (w *recorder) stdout(l Line) {
	if _, err := os.Stdout.WriteString(l.String() + "\n"); err != nil {
		os.Exit(exitOrphaned)
	}
}
