// Package proctest runs leader elections across real OS processes, in real time, and checks
// the timing rules that only real processes can prove: a leader killed with SIGKILL is
// replaced within L + R of its last renewal (E6), a leader stopped with SIGTERM releases the
// lease and another instance leads within R (E7), and two instances never lead at once (E2,
// E5, W7).
//
// A test package using it imports the store backend under test (for its URL opener) and calls
// MaybeWorker first thing in its TestMain: the test binary then doubles as the worker program,
// which Run starts several times over one store URL.
//
//	func TestMain(m *testing.M) {
//		proctest.MaybeWorker()
//		os.Exit(m.Run())
//	}
//
// Every worker appends its leadership events to one shared log file, one line per event
// written with a single O_APPEND write, stamped with the host's CLOCK_MONOTONIC (Now), which
// all processes on a host share. After the run the driver rebuilds each instance's leadership
// intervals from that log and checks that intervals of different instances never overlap.
package proctest
