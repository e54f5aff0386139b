package proctest

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

// Exit codes of a worker.
const (
	ExitOK        = 0 // SIGTERM, and Stop released the lease (or the worker's job is done)
	ExitStopError = 1 // SIGTERM, and Stop returned an error
	ExitSetup     = 2 // bad environment, store or log file
	ExitOrphaned  = 3 // the driver went away (stdin closed, or stdout gone)
	ExitLogWrite  = 4 // a line could not be written: the log would be incomplete
)

// Worker is a worker process's side of the harness: its configuration, its shared log and
// its SIGTERM.
type Worker struct {
	Config
	LogFile *os.File // Config.Log opened for appending; nil when Log is ""

	prog string // names the program in error messages
	term chan os.Signal
}

// ServeWorker makes this process a worker when the environment says it is one (Start sets
// EnvID): it reads its Config, opens the shared log, calls run and exits with the code run
// returns. Otherwise it returns at once. Call it first in main, or in TestMain.
//
// From before run is called, SIGTERM goes to Term, and the worker exits with ExitOrphaned
// as soon as its stdin reaches EOF: the driver died, and no worker outlives it.
func ServeWorker(prog string, run func(w *Worker) int) {
	id := os.Getenv(EnvID)
	if id == "" {
		return
	}
	os.Exit(serveWorker(prog, id, run))
}

func serveWorker(prog, id string, run func(*Worker) int) int {
	w := &Worker{
		Config: Config{ID: id, URL: os.Getenv(EnvURL), Lease: os.Getenv(EnvLease), Log: os.Getenv(EnvLog)},
		prog:   prog,
		term:   make(chan os.Signal, 1),
	}
	// Before anything else: the driver may stop a worker as soon as it is ready, and an
	// uncaught SIGTERM would kill it without its stopped line.
	signal.Notify(w.term, syscall.SIGTERM)
	go func() {
		// Stdin is a pipe from the driver, never written to: EOF means the driver is gone.
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(ExitOrphaned)
	}()
	if strings.ContainsAny(id, " \n") {
		return w.Fail("%s %q holds a space or a newline", EnvID, id)
	}
	var err error
	if w.LeaseDuration, err = time.ParseDuration(os.Getenv(EnvLeaseDuration)); err != nil {
		return w.Fail("%s: %v", EnvLeaseDuration, err)
	}
	if w.RenewInterval, err = time.ParseDuration(os.Getenv(EnvRenewInterval)); err != nil {
		return w.Fail("%s: %v", EnvRenewInterval, err)
	}
	if w.Log != "" {
		if w.LogFile, err = os.OpenFile(w.Log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err != nil {
			return w.Fail("%s: %v", EnvLog, err)
		}
		defer w.LogFile.Close()
	}
	return run(w)
}

// Fail reports a setup error on stderr and returns ExitSetup.
func (w *Worker) Fail(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "%s worker %s: %s\n", w.prog, w.ID, fmt.Sprintf(format, args...))
	return ExitSetup
}

// Term receives SIGTERM: the driver asks the worker to stop.
func (w *Worker) Term() <-chan os.Signal { return w.term }

// Report writes a line of this worker on stdout, stamped now on the shared clock: for
// workers whose events come from elsewhere than a cluster.Elector (the bench's anchors).
func (w *Worker) Report(kind Kind, term uint64, reason string) {
	WriteLine(Line{Instance: w.ID, Kind: kind, Term: term, T: Now(), Reason: reason})
}

// Ready writes the ready line the driver waits for after starting the worker.
func (w *Worker) Ready() { w.Report(KindReady, 0, "") }

// Stopped writes the stopped line with the result of the worker's stop and returns the
// matching exit code.
func (w *Worker) Stopped(err error) int {
	if err != nil {
		w.Report(KindStopped, 0, err.Error())
		return ExitStopError
	}
	w.Report(KindStopped, 0, "ok")
	return ExitOK
}

// Observer returns the worker's leadership lines observer: Observer's, over the shared log.
func (w *Worker) Observer() func(cluster.Event) {
	return Observer(w.ID, w.LeaseDuration, w.RenewInterval, w.LogFile)
}

// RunElector starts el, writes the ready line, and on SIGTERM stops el, bounded by L,
// writing the stopped line. It returns the worker's exit code: ExitOK when Stop succeeded.
func (w *Worker) RunElector(ctx context.Context, el *cluster.Elector) int {
	if err := el.Start(ctx); err != nil {
		return w.Fail("%v", err)
	}
	w.Ready()
	<-w.term
	stopCtx, cancel := context.WithTimeout(ctx, w.LeaseDuration)
	defer cancel()
	return w.Stopped(el.Stop(stopCtx))
}

// WriteLine writes l on stdout (WriteStdout).
func WriteLine(l Line) { WriteStdout(l.String()) }

// WriteStdout writes one line on stdout with a single write, so that lines of different
// goroutines never interleave (a pipe write of less than PIPE_BUF bytes is atomic). When
// stdout is gone, so is the driver: the worker exits with ExitOrphaned.
func WriteStdout(line string) {
	if _, err := os.Stdout.WriteString(line + "\n"); err != nil {
		os.Exit(ExitOrphaned)
	}
}
