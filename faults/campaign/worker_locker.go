package campaign

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/cluster/locker"
	"github.com/leasehold/leasehold/internal/proctest"
)

// envLocker, set to 1, makes a worker hold the lease through a locker.Locker (Options.Locker).
const envLocker = "LEASEHOLD_FAULTS_LOCKER"

// runLockerWorker holds the lease's name as a key of a locker.Locker, as a job holding a
// per-key lock does: it acquires the key, acts on the fenced resource with the holding's Term
// while IsHeld says so (its Context alone lags the deadline after a pause), and when Done
// closes (the key lost) acquires it again, a new holding with a new term (P1, P2). Its
// Locker's events make the same lines as the Elector worker's, so the campaign's checks hold
// it to the same rules. On SIGTERM it releases the key
// (or gives up the Acquire in progress) and writes the stopped line: "ok" when the release
// succeeded within L.
func runLockerWorker(w *proctest.Worker, lock cluster.Lock) int {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	locker, err := locker.New(locker.Config{
		Lock:          lock,
		InstanceID:    w.ID,
		LeaseDuration: w.LeaseDuration,
		RenewInterval: w.RenewInterval,
		Logger:        logger,
		Observer:      workerObserver(w),
	})
	if err != nil {
		return w.Fail("%v", err)
	}
	act := newActor(w.ID, os.Getenv(envResource))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := make(chan struct{})
	stopped := make(chan error, 1)
	go func() { stopped <- holdLoop(ctx, w, locker, act, logger, stop) }()
	w.Ready()
	select {
	case <-w.Term():
	case err := <-stopped:
		// An exit the runner did not ask for: it reports it as a violation, with this line.
		fmt.Fprintf(os.Stderr, "faults worker %s: the Locker stopped holding: %v\n", w.ID, err)
		return proctest.ExitStopError
	}
	close(stop)
	cancel() // an Acquire in progress gives up: its election is stopped, nothing left held
	return w.Stopped(<-stopped)
}

// holdLoop acquires the key, holds it until it is lost or stop closes, and starts again. It
// returns the result of the release when stop closes.
func holdLoop(ctx context.Context, w *proctest.Worker, locker *locker.Locker, act *actor, log *slog.Logger, stop <-chan struct{}) error {
	for {
		held, err := locker.Acquire(ctx, w.Lease)
		if err != nil {
			if ctx.Err() == nil {
				return err // Acquire fails only when ctx ends: a broken Locker
			}
			// Stopped while waiting: nothing is held, unless the election Acquire ran could
			// not be stopped, an error Acquire joins to ctx's.
			if j, ok := err.(interface{ Unwrap() []error }); ok && len(j.Unwrap()) > 1 {
				return err
			}
			return nil
		}
		if term, ok := cluster.TermOf(held.Context()); !ok || term != held.Term() {
			return fmt.Errorf("faults worker %s: the holding's context carries term %d (%v), Term says %d (P1, W8)", w.ID, term, ok, held.Term())
		}
		acted := make(chan struct{})
		go func() {
			defer close(acted)
			_ = act.lead(held.Context(), held.IsHeld)
		}()
		select {
		case <-held.Done():
			<-acted
			log.Warn("faults worker: key lost, acquiring it again", "key", held.Key(), "term", held.Term())
		case <-stop:
			rctx, cancel := context.WithTimeout(context.Background(), w.LeaseDuration)
			err := held.Release(rctx)
			cancel()
			<-acted
			return err
		}
	}
}
