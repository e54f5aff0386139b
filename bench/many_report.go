package main

import (
	"fmt"
	"strings"
	"time"
)

// writeManyLocker writes the table of the keys held through one Locker: what a held key
// costs once taken.
func writeManyLocker(b *strings.Builder, rep *report) {
	var rows []manyRow
	for _, r := range rep.Many {
		if r.Locker != nil {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return
	}
	o := rep.Options
	b.WriteString("\n### Keys held through one Locker\n\n")
	fmt.Fprintf(b, "One process acquires N keys through one locker.Locker (etcd: N concurrency.Mutex on one Session, TTL L) with %d goroutines and keeps each Held in a slice (no goroutine per key), then holds them for %v (L = %v, R = %v). "+
		"Writes per R: the creates and updates during the window per R (the session lease's renewal is 1; etcd: every gRPC call and stream message). "+
		"Per held key: what the process grew by once every key was held (live heap after a GC; resident set at the end of the window), over a baseline taken after the harness allocated its own per-key state (its key strings and slice, the last column, not included). "+
		"Lost: holdings whose Done closed during the window; unconfirmed: keys held whose record named another holding.\n\n", manyAcquirers, o.Window, o.L, o.R)
	b.WriteString("| backend | keys | held | acquired per s | writes per R | requests/s | CPU (% of a core) | heap per key (B) | RSS per key (B) | lost | unconfirmed | goroutines | release of all | harness per key (B) |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| %s | %d | %d → %d | %.0f | %.2f | %.2f | %.1f%% | %d | %d | %s | %d | %d | %.1fs | %d |\n", r.Backend, r.Leases, r.Leading, r.LeadingAtEnd,
			acquireRate(r.manyResult), writesPerR(r.manyResult, o.R), float64(r.Requests)/r.Window.Seconds(), 100*r.CPU.Seconds()/r.Window.Seconds(),
			r.Locker.HeapPerKey, r.Locker.RSSPerKey, byReason(r.Lost, r.LostBy), r.Unconfirmed, r.Goroutines, r.StopTook.Seconds(), r.Locker.HarnessPerKey)
	}
}

// acquireRate is the keys held per second of the wait for all of them.
func acquireRate(r manyResult) float64 {
	if r.ReadyAfter <= 0 {
		return 0
	}
	return float64(r.Leading) / r.ReadyAfter.Seconds()
}

// writesPerR is the writes of the window per renew interval r.
func writesPerR(res manyResult, r time.Duration) float64 {
	if res.Locker == nil || res.Window <= 0 {
		return 0
	}
	return float64(res.Locker.Writes) / (float64(res.Window) / float64(r))
}

// logManyLocker logs a Locker row's own figures.
func logManyLocker(logf func(string, ...any), row manyRow, r time.Duration) {
	if row.Locker == nil {
		return
	}
	logf("bench: %s, %d keys held: %.0f acquired per s, %.2f writes per R, %d B heap and %d B RSS per held key (harness %d B per key apart), %d lost, %d unconfirmed, release of all %v",
		row.Backend, row.Leases, acquireRate(row.manyResult), writesPerR(row.manyResult, r), row.Locker.HeapPerKey, row.Locker.RSSPerKey, row.Locker.HarnessPerKey,
		row.Lost, row.Unconfirmed, ms(row.StopTook))
}
