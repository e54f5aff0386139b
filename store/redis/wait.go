package redis

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/leasehold/leasehold/store/driver"
)

// Waiting for replicas. Redis replicates asynchronously: a primary acknowledges a write before
// any replica has it, and a failover that promotes a replica which had not received it loses
// it, acknowledged. With wait_replicas=N, every write is followed, in the same round trip
// (a pipeline on the same connection), by WAIT N timeout: the number of replicas that have
// acknowledged every write of that connection. Fewer than N within wait_timeout, and the write
// that was made is not a success but an unknown outcome (ErrNotReplicated, which holds no
// store sentinel: T7): it is on the primary, and a failover may keep it or lose it. An answer
// that made no write (the condition failed, the key exists or is missing) is returned as it is.
//
// WAIT does not make Redis strongly consistent: a write it confirmed reached N replicas, yet
// the Sentinels may promote another replica, one that missed it; and a write it did not confirm
// may have reached the replica that is promoted.

// ErrNotReplicated is the error of a write that fewer replicas than wait_replicas acknowledged
// within wait_timeout. Its outcome is unknown: it was made on the primary, which a failover
// may replace by a replica that does not have it.
var ErrNotReplicated = errors.New("store/redis: the write was not acknowledged by enough replicas: outcome unknown (a failover may lose it or keep it)")

// defaultWaitTimeout is wait_timeout when wait_replicas is given alone.
const defaultWaitTimeout = time.Second

// waitRule is what the URL asks of each write: replicas 0 asks nothing.
type waitRule struct {
	replicas int
	timeout  time.Duration
}

// takeWait reads and removes wait_replicas and wait_timeout from q.
func takeWait(q url.Values) (waitRule, error) {
	var w waitRule
	if q.Has("wait_replicas") {
		v := driver.TakeParam(q, "wait_replicas", "")
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return w, fmt.Errorf("store/redis: URL parameter \"wait_replicas\" is %q: want the number of replicas (0 or more) that must acknowledge each write", v)
		}
		w.replicas = n
	}
	if !q.Has("wait_timeout") {
		if w.replicas > 0 {
			w.timeout = defaultWaitTimeout
		}
		return w, nil
	}
	v := driver.TakeParam(q, "wait_timeout", "")
	if w.replicas == 0 {
		return w, errors.New("store/redis: URL parameter \"wait_timeout\" without \"wait_replicas\" (1 or more): there is nothing to wait for")
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Millisecond {
		return w, fmt.Errorf("store/redis: URL parameter \"wait_timeout\" is %q: want a duration of 1ms or more, such as 100ms (WAIT counts milliseconds; 0 would wait for ever)", v)
	}
	w.timeout = d.Truncate(time.Millisecond)
	return w, nil
}

// fits checks the rule against the client's read timeout (0: go-redis's 3 s; negative: none):
// a WAIT that outlasts it would end in a timeout, never in its answer.
func (w waitRule) fits(readTimeout time.Duration) error {
	if w.replicas == 0 {
		return nil
	}
	if readTimeout == 0 {
		readTimeout = 3 * time.Second
	}
	if readTimeout > 0 && w.timeout >= readTimeout {
		return fmt.Errorf("store/redis: URL parameter \"wait_timeout\" (%v) is not shorter than read_timeout (%v): the read of WAIT's answer would time out first", w.timeout, readTimeout)
	}
	return nil
}

// send queues WAIT on pipe. (go-redis's Pipeliner has no Wait method.)
func (w waitRule) send(ctx context.Context, pipe goredis.Pipeliner) *goredis.Cmd {
	return pipe.Do(ctx, "wait", w.replicas, w.timeout.Milliseconds())
}

// wrote reports whether a script's reply says it wrote: "ok" (a Patch or Delete), 1 (Create).
func wrote(cmd *goredis.Cmd) bool {
	switch v := cmd.Val().(type) {
	case string:
		return v == "ok"
	case int64:
		return v == 1
	}
	return false
}

// checkReplicated turns the successes among cmds into ErrNotReplicated when wc, their WAIT,
// counts fewer replicas than w asks, or failed.
func (w waitRule) checkReplicated(wc *goredis.Cmd, cmds ...*goredis.Cmd) {
	for _, cmd := range cmds {
		if cmd.Err() != nil || !wrote(cmd) {
			continue
		}
		if n, err := wc.Int64(); err != nil {
			cmd.SetErr(fmt.Errorf("store/redis: the write was made, and WAIT after it failed: %w", err))
		} else if n < int64(w.replicas) {
			cmd.SetErr(fmt.Errorf("%w: %d of %d replicas within wait_timeout %v", ErrNotReplicated, n, w.replicas, w.timeout))
		}
	}
}
