package main

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/proctest"
	"github.com/leasehold/leasehold/internal/storerecord"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/store"
)

// The many-elections scenario through one locker.Locker, small: 200 keys held by one worker
// process over PostgreSQL and over Redis for 2 s. Every key is held (P1, P4), the window's
// writes are the session lease's renewals, not one per key (P7), every key the
// Locker still holds at the end is its own in the store, with its term (no loss left
// unreported, P2), and once the worker has released them every record is free (E7). Speed is
// not asserted: the figures are logged.
func TestManyLocker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a worker process holding 200 keys over real servers")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the bench reads /proc and CLOCK_MONOTONIC on Linux")
	}
	const keys = 200
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"postgres", "redis"} {
		t.Run(name, func(t *testing.T) {
			srv := &servers{ctx: t.Context(), dir: t.TempDir()}
			defer srv.close()
			sys, err := srv.system(name)
			if errors.Is(err, errUnavailable) {
				testenv.Unavailable(t, err.Error())
			}
			if err != nil {
				t.Fatal(err)
			}
			var id [3]byte
			_, _ = crand.Read(id[:])
			lease := "bench-test-k" + hex.EncodeToString(id[:])
			f := &fleet{ctx: t.Context(), exe: exe, args: []string{"-test.run=^$"}, env: sys.Env, kind: kindManyLock, lease: lease,
				l: time.Second, r: 250 * time.Millisecond, inbox: proctest.NewInbox[message]()}
			defer f.close()
			row, err := many(f, keys, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d keys: %d held after %v, %d at the end; %d requests in %v, %s RSS, %d goroutines, %d lost %v, %d failed attempts %v, release of all %v",
				keys, row.Leading, row.ReadyAfter, row.LeadingAtEnd, row.Requests, row.Window, mib(row.RSS), row.Goroutines, row.Lost, row.LostBy, row.Failed, row.FailedBy, row.StopTook)
			if row.Via != viaLocker || row.Leases != keys || row.Leading != keys {
				t.Errorf("through %q: %d of %d keys held: want all, through a Locker", row.Via, row.Leading, row.Leases)
			}
			if row.Requests == 0 || row.RSS <= 0 || row.Goroutines <= 0 {
				t.Errorf("requests %d, RSS %d, goroutines %d: want each measured", row.Requests, row.RSS, row.Goroutines)
			}
			if row.Locker == nil {
				t.Fatal("no Locker figures in the result")
			}
			t.Logf("%d writes in the window, %d B heap and %d B RSS per held key, harness %d B per key", row.Locker.Writes, row.Locker.HeapPerKey, row.Locker.RSSPerKey, row.Locker.HarnessPerKey)
			// P7: the window's writes are the session lease's renewals, about one per R,
			// not one per key per R; a key's record renewed would make them thousands.
			if row.Locker.Writes < 1 || row.Locker.Writes >= keys {
				t.Errorf("P7: %d writes in %v with %d keys held: want the session lease's renewals only", row.Locker.Writes, row.Window, keys)
			}
			if row.Locker.HarnessPerKey <= 0 {
				t.Errorf("the harness's own cost per key was not measured: %d B", row.Locker.HarnessPerKey)
			}
			if row.Unconfirmed != 0 {
				t.Errorf("P2: %d keys held with their Done open while their record named another holding (see the worker's stderr above)", row.Unconfirmed)
			}
			if row.StopFailures != 0 {
				t.Errorf("E7: %d of the releases failed", row.StopFailures)
			}
			checkReleased(t, sys, lease, keys)
		})
	}
}

// checkReleased reads the n keys' records after the worker exited: each must be free.
func checkReleased(t *testing.T, sys system, lease string, n int) {
	t.Helper()
	var rawURL string
	for _, e := range sys.Env {
		if v, ok := strings.CutPrefix(e, proctest.EnvURL+"="); ok {
			rawURL = v
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := store.Open(ctx, rawURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(s)
	lock := cluster.NewStoreLock(s)
	held := 0
	for i := range n {
		key := fmt.Sprintf("%s-%d", lease, i)
		rec, err := lock.Get(ctx, key)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if rec.Holder != "" {
			held++
		}
		_ = s.Delete(ctx, cluster.NewStoreLock(nil).(storerecord.Codec[cluster.Record]).Key(key), nil) // a shared server keeps the records
	}
	if held != 0 {
		t.Errorf("E7: %d of %d keys still held after the worker released them and exited", held, n)
	}
}
