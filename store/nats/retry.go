package nats

import (
	"context"
	"errors"
	"fmt"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// jsClusterNotAvailable is the JetStream API's "JetStream system temporarily unavailable": a
// clustered server that has no meta leader at the moment, which it may have an instant later.
const jsClusterNotAvailable = 10008

// The pause between two attempts starts at retryPause and doubles up to retryPauseMax: short,
// for a request lost once, and no flood of requests on a JetStream that cannot answer for a
// while.
const retryPause, retryPauseMax = 100 * time.Millisecond, time.Second

// retryUnanswered calls fn until it gets an answer, each call bounded by perAttempt (none when
// zero) and by ctx. The JetStream client waits for a reply until its context ends: a request
// lost on the way (a meta-leader change, a route reconnecting) would otherwise hold Open until
// its caller's deadline, although the next request would have been answered. An answer, an
// error included, ends the loop at once; when ctx ends first, the error counts the attempts
// that went unanswered and wraps ctx's error.
func retryUnanswered[T any](ctx context.Context, perAttempt time.Duration, fn func(context.Context) (T, error)) (T, error) {
	pause := retryPause
	for n := 1; ; n++ {
		v, err := attempt(ctx, perAttempt, fn)
		if err == nil || !unanswered(err) {
			return v, err
		}
		if ctx.Err() == nil {
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
			pause = min(2*pause, retryPauseMax)
		}
		if ctx.Err() != nil {
			var zero T
			return zero, giveUp(ctx, n, err)
		}
	}
}

// attempt calls fn with ctx bounded by perAttempt (none when zero).
func attempt[T any](ctx context.Context, perAttempt time.Duration, fn func(context.Context) (T, error)) (T, error) {
	if perAttempt > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, perAttempt)
		defer cancel()
	}
	return fn(ctx)
}

// unanswered reports whether err says that a request got no answer, or an answer that only
// means "not now": trying again may get the real one.
func unanswered(err error) bool {
	// A context's end is the attempt's own deadline, or ctx's, which the loop checks.
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, natsgo.ErrNoResponders) || errors.Is(err, natsgo.ErrTimeout) ||
		errors.Is(err, natsgo.ErrReconnectBufExceeded) { // not sent: the client is reconnecting
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jsClusterNotAvailable
}

// giveUp counts the unanswered attempts in the error: several tell requests lost on the way
// from a single one cut short by the caller's deadline.
func giveUp(ctx context.Context, n int, last error) error {
	attempts := "1 attempt"
	if n > 1 {
		attempts = fmt.Sprintf("%d attempts", n)
	}
	if errors.Is(last, context.DeadlineExceeded) || errors.Is(last, context.Canceled) {
		return fmt.Errorf("no answer from JetStream to %s: %w", attempts, ctx.Err())
	}
	return fmt.Errorf("no answer from JetStream to %s (the last: %v): %w", attempts, last, ctx.Err())
}
