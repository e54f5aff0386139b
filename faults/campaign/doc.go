// Package campaign is the fault campaign: it starts several worker processes
// electing a leader over one backend, injects faults on a seeded random schedule (SIGKILL of
// the leader or of a follower, SIGSTOP pauses longer than the lease, clean SIGTERM stops,
// latency, resets and partitions of one instance through a loopback TCP proxy, outages of the
// backend for every instance, and faults of one instance's lease watch between its Lock and
// its Elector: notifications dropped, delayed, duplicated, reordered, a stream gone silent;
// see FaultyWatcher), and checks what the library promises:
//
//   - two instances never lead at once (E2, E5, W7), outside the windows where a SIGSTOP froze
//     a process between an answer and its log line;
//   - the fenced resource never accepts an action of a term lower than one it has seen, and no
//     worker acts outside its own leadership (W7, W8);
//   - a crashed, paused or partitioned leader is replaced within L + R of its last renewal (E6),
//     a cleanly stopped one within R of its release (E7), each plus a slack for scheduling.
//
// In the Ranked mode (Options.Ranked, `go run ./faults --ranked`) every worker's Elector has a
// priority, its slot's number, so that the highest slot ranks first (Q1), a stability window
// (Options.StabilityWindow, 2 L by default, Q2) and a health check whose answer the runner sets
// through the worker's control file, the one the watch faults and clock jumps use ("health
// fail", "health ok"; U1-U3). Four kinds join the schedule:
//
//   - health-leader: the leader's check fails until a while after the handover; another
//     instance must lead within HealthFailures R + 3 R plus the slack of the first failure (U2);
//   - preempt: the worker of the highest priority stops cleanly and starts again once a lower
//     one leads; it must lead within its window + 2 R plus the slack of its start (Q2, Q3);
//   - health-follower: a follower's check fails for longer than L;
//   - health-all: every check fails, the leader's last; the leader must keep leading (U3).
//
// Each worker also reports the requests to hand over it writes: no candidate may ask within
// its window (Q2) or while its check fails (U1), and since a request is a new revision of the
// holder's record (R1), a crashed leader's takeover is timed from the later of its last renewal
// and the last request on its record (E6).
//
// Every process stamps its events with the host's CLOCK_MONOTONIC (proctest.Now), so the
// workers' leadership lines, the resource's actions and the runner's faults share one clock.
// The worker is the runner's own executable, re-executed as a proctest worker (proctest.Start,
// proctest.ServeWorker): call MaybeWorker first in main (or TestMain).
//
// Run writes nothing itself; Report.WriteFiles writes the Markdown, JSON and SVG files.
package campaign
