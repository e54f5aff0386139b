package nats

import (
	"context"
	"errors"
	"fmt"
	"sync"

	natsgo "github.com/nats-io/nats.go"
)

// errConnLost ends the calls in flight when the connection to the server is lost.
var errConnLost = errors.New("store/nats: the connection to the server was lost during the call (its outcome is unknown)")

// connEpoch ends the calls in flight when the connection is lost. nats.go keeps waiting for
// the reply to a request sent on a connection that broke, until the request's context ends,
// although that reply can never come (the client reconnects to another server with a new
// connection): a leader whose server died would spend its whole attempt on it, and could stop
// leading before it tried again through the server it reconnected to.
type connEpoch struct {
	mu     sync.Mutex
	ctx    context.Context // canceled with errConnLost when the connection is lost
	cancel context.CancelCauseFunc
}

func (e *connEpoch) init(conn *natsgo.Conn) {
	e.ctx, e.cancel = context.WithCancelCause(context.Background())
	conn.SetDisconnectErrHandler(func(*natsgo.Conn, error) { e.lost() })
}

func (e *connEpoch) lost() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cancel(errConnLost)
	e.ctx, e.cancel = context.WithCancelCause(context.Background())
}

// call runs fn with a context that also ends when the connection is lost, and says so in the
// error fn returns then.
func (e *connEpoch) call(ctx context.Context, fn func(context.Context) error) error {
	e.mu.Lock()
	epoch := e.ctx
	e.mu.Unlock()
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(epoch, func() { cancel(context.Cause(epoch)) })
	defer stop()
	err := fn(cctx)
	// Only a call that the lost connection cut short: an answer that came before is the answer.
	if errors.Is(err, context.Canceled) && ctx.Err() == nil && errors.Is(context.Cause(cctx), errConnLost) {
		return fmt.Errorf("%w (%v)", errConnLost, err)
	}
	return err
}
