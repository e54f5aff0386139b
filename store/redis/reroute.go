package redis

import (
	"context"
	"errors"
	"io"
	"net"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Following a shard's failover. go-redis's cluster client reads the map of the slots again on
// a MOVED or ASK answer, which only a live node gives, and otherwise once a minute: a command
// sent to a primary that died keeps going to its address (connection refused) after the
// cluster has promoted its replica, until something else makes the client look again. A
// follower polling a record on that shard would fail every attempt, and take over a record
// put back by the failover (a replica promoted without the last writes) L after the first
// attempt that reads it, so late. So a command that did not reach its node has the client
// read the slots again, and a Get, which can be sent again (a write cannot: its outcome is
// unknown), is sent once more when the slot's primary has changed meanwhile.

// rerouteWait bounds how long a failed Get waits for the client's new map of the slots. The
// cluster answers CLUSTER SLOTS in a round trip; a failover not yet done leaves the map as
// it was, and the Get fails as it did, this much later.
const rerouteWait = 100 * time.Millisecond

// unreachable reports whether err says the command did not reach its node or got no answer
// from it (a refused or broken connection, a timeout): not an answer of the server, not the
// end of the caller's context.
func unreachable(err error) bool {
	if err == nil || errors.Is(err, goredis.Nil) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var reply goredis.Error
	if errors.As(err, &reply) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// lookAgain has a cluster client read the map of the slots again after err, when err says a
// command did not reach its node. Off a cluster it does nothing.
func (s *backend) lookAgain(err error) {
	if cc, ok := s.client.(*goredis.ClusterClient); ok && unreachable(err) {
		cc.ReloadState(context.Background())
	}
}

// rerouted reports, after a Get of rkey failed with err, whether the client now sends rkey's
// commands to another primary than the one it failed on, having read the map of the slots
// again: the Get may then be sent once more. It waits for the new map at most rerouteWait.
func (s *backend) rerouted(ctx context.Context, rkey string, err error) bool {
	cc, ok := s.client.(*goredis.ClusterClient)
	if !ok || !unreachable(err) {
		return false
	}
	was, werr := cc.MasterForKey(ctx, rkey)
	if werr != nil {
		return false
	}
	cc.ReloadState(ctx)
	deadline := time.NewTimer(rerouteWait)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return false
		case <-tick.C:
		}
		now, nerr := cc.MasterForKey(ctx, rkey)
		if nerr == nil && now.Options().Addr != was.Options().Addr {
			return true
		}
	}
}
