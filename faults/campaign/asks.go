package campaign

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/proctest"
)

// In the Ranked mode a worker reports each request to hand over it writes on another holder's
// record (Q2, U2): "ask ID T HOLDER", T taken once the write returned, so at or after the
// instant it landed. The runner needs them for two reasons. A request is a new revision of the
// holder's record, so a follower judges the record's expiry from it (R1, E6): a crashed or
// paused leader's takeover is bounded from the later of its last renewal and the last
// request on its record. And a candidate asks only once its stability window has passed, and
// never while its own check fails (Q2, U1): checkRanked holds the asks to that.

// askLine reports on a worker's stdout that it asked Holder to hand over.
type askLine struct {
	Instance string
	T        int64
	Holder   string
}

func (l askLine) String() string { return fmt.Sprintf("ask %s %d %s", l.Instance, l.T, l.Holder) }

func parseAskLine(s string) (askLine, bool) {
	f := strings.Fields(s)
	if len(f) != 4 || f[0] != "ask" {
		return askLine{}, false
	}
	t, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return askLine{}, false
	}
	return askLine{Instance: f[1], T: t, Holder: f[3]}, true
}

// askingLock reports the worker's requests to hand over, as the Elector writes them through
// its Lock: an Update naming this instance as the next holder, with preempt, of a record
// another instance holds (Q2). A write that lost its race did not land and is not reported;
// one that failed otherwise may have landed, and is.
type askingLock struct {
	cluster.Lock
	id string
}

func (l askingLock) Update(ctx context.Context, name string, r cluster.Record) (cluster.Record, error) {
	out, err := l.Lock.Update(ctx, name, r)
	if r.Preempt && r.NextHolder == l.id && r.Holder != "" && r.Holder != l.id && !errors.Is(err, cluster.ErrConflict) {
		proctest.WriteStdout(askLine{Instance: l.id, T: proctest.Now(), Holder: r.Holder}.String())
	}
	return out, err
}

// askingWatchLock is askingLock over a Lock that watches: the Elector keeps its watch (E9).
type askingWatchLock struct {
	askingLock
	cluster.Watcher
}

// withAsks wraps lock so that the worker id reports its requests to hand over.
func withAsks(lock cluster.Lock, id string) cluster.Lock {
	a := askingLock{Lock: lock, id: id}
	if w, ok := lock.(cluster.Watcher); ok {
		return askingWatchLock{askingLock: a, Watcher: w}
	}
	return a
}

// lastAsk returns the latest request written on holder's record after from and before to.
func lastAsk(asks []askLine, holder string, from, to int64) (int64, bool) {
	var at int64
	found := false
	for _, a := range asks {
		if a.Holder == holder && a.T > from && a.T < to && (!found || a.T > at) {
			at, found = a.T, true
		}
	}
	return at, found
}
