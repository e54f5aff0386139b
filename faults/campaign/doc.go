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
// Every process stamps its events with the host's CLOCK_MONOTONIC (proctest.Now), so the
// workers' leadership lines, the resource's actions and the runner's faults share one clock.
// The worker is the runner's own executable, re-executed as a proctest worker (proctest.Start,
// proctest.ServeWorker): call MaybeWorker first in main (or TestMain).
//
// Run writes nothing itself; Report.WriteFiles writes the Markdown, JSON and SVG files.
package campaign
