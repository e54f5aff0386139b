// Package proctest runs leader elections across real OS processes, in real time. It is the
// one worker-process harness of the repository: the failover tests (Run, here), the fault
// campaign (faults/campaign) and the benchmarks (bench) all start their workers, talk to them
// and check them with it.
//
// A driver starts a worker with Start: the test binary or the command re-executed, in a
// process group of its own, told its Config through the environment, its stdout lines
// delivered to an Inbox, the end of its stderr kept for failure messages, signalled as a
// group (SIGKILL, SIGTERM, SIGSTOP, SIGCONT). The same program calls ServeWorker first
// thing (in TestMain, or main), which makes it a worker when the environment says so: it
// writes a ready line once it runs, leadership lines as they happen (Observer), a stopped
// line after SIGTERM, and exits when its driver goes away.
//
// Every worker appends its leadership events to one shared log file, one line per event
// written with a single O_APPEND write, stamped with the host's CLOCK_MONOTONIC (Now), which
// all processes on a host share. After the run the driver rebuilds each instance's leadership
// intervals from that log (Intervals) and checks that intervals of different instances never
// overlap (CheckExclusive).
//
// Run checks the timing rules that only real processes can prove: a leader killed with
// SIGKILL is replaced within L + R of its last renewal (E6), a leader stopped with SIGTERM
// releases the lease and another instance leads within R (E7), and two instances never lead
// at once (E2, E5, W7). A test package using it imports the store backend under test (for its
// URL opener) and calls MaybeWorker first thing in its TestMain: the test binary then doubles
// as the worker program, which Run starts several times over one store URL.
//
//	func TestMain(m *testing.M) {
//		proctest.MaybeWorker()
//		os.Exit(m.Run())
//	}
package proctest
