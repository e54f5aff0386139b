package main

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/proctest"
)

// The etcd anchor of the keys held through one Locker, small: 200 keys held through etcd's
// concurrency.Mutex on one Session by one worker process for 2 s against an embedded etcd.
// Every key is held, none lost, each is in etcd at the end, the window's requests are the
// Session's keep-alives (not one per key), and every Mutex unlocks. Speed is not asserted.
func TestManyEtcdMutex(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a worker process holding 200 keys over an embedded etcd")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the bench reads /proc and CLOCK_MONOTONIC on Linux")
	}
	const keys = 200
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv := &servers{ctx: t.Context(), dir: t.TempDir()}
	defer srv.close()
	sys, err := srv.system("etcd-concurrency")
	if err != nil {
		t.Fatal(err)
	}
	f := &fleet{ctx: t.Context(), exe: exe, args: []string{"-test.run=^$"}, env: sys.Env, kind: kindManyEtcdMutex, lease: "bench-test-e",
		l: time.Second, r: 250 * time.Millisecond, inbox: proctest.NewInbox[message]()}
	defer f.close()
	row, err := many(f, keys, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if row.Locker == nil {
		t.Fatal("no per-key figures in the result")
	}
	t.Logf("%d keys: %d held after %v, %d at the end; %d requests in %v, %d B heap and %d B RSS per key, %d goroutines, unlock of all %v",
		keys, row.Leading, row.ReadyAfter, row.LeadingAtEnd, row.Locker.Writes, row.Window, row.Locker.HeapPerKey, row.Locker.RSSPerKey, row.Goroutines, row.StopTook)
	if row.Via != viaEtcdMutex || row.Leading != keys || row.LeadingAtEnd != keys || row.Lost != 0 {
		t.Errorf("through %q: %d of %d keys held, %d at the end, %d lost: want all held through etcd's Mutex, none lost", row.Via, row.Leading, keys, row.LeadingAtEnd, row.Lost)
	}
	if row.Unconfirmed != 0 {
		t.Errorf("%d held keys missing from etcd at the end", row.Unconfirmed)
	}
	if row.Locker.Writes < 1 || row.Locker.Writes >= keys {
		t.Errorf("%d requests in %v with %d keys held: want the Session's keep-alives only", row.Locker.Writes, row.Window, keys)
	}
	if row.StopFailures != 0 {
		t.Errorf("%d unlocks (or the Session's close) failed", row.StopFailures)
	}
}
