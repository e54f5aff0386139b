package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// writeMarkdown writes the report's tables.
func writeMarkdown(w io.Writer, rep *report) error {
	var b strings.Builder
	o, m := rep.Options, rep.Machine
	fmt.Fprintf(&b, "## leasehold against the anchors\n\n")
	fmt.Fprintf(&b, "`%s`, %s, took %v. Machine: %s CPUs (%s), %s, Linux %s, %s; load average (1, 5, 15 min) %s before, %s after: other engineers' tests shared the 2 cores.\n\n",
		o.Command, rep.Started.UTC().Format("2006-01-02 15:04 UTC"), rep.Took.Round(time.Second), m.CPUs, m.Model, m.Memory, m.Kernel, m.Go, m.LoadBefore, m.LoadAfter)
	if len(rep.Systems) > 0 {
		fmt.Fprintf(&b, "Settings: L = %v, R = %v for everyone (client-go: LeaseDuration L, RenewDeadline (L+R)/2 = %v, RetryPeriod R, ReleaseOnCancel; etcd: session TTL %ds). "+
			"%d crash and %d handover trials per system with %d candidate processes; steady state over %v windows; seed %d.\n\n",
			o.L, o.R, (o.L+o.R)/2, int(o.L/time.Second), o.Trials, o.Trials, o.LatencyInstances, o.Window, rep.Seed)
		writeSystems(&b, rep)
	}
	fmt.Fprintf(&b, "\nIsLeader: %.1f ns per call (best of 3 rounds of 20 million calls, on a leader).\n", rep.IsLeader)

	writeRatios(&b, rep)
	writeMany(&b, rep)
	writeManyLocker(&b, rep)
	writeParts(&b, rep)
	if len(rep.Skipped) > 0 {
		b.WriteString("\nNot measured:\n\n")
		for _, s := range rep.Skipped {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}
	b.WriteString("\nleasehold/memory is not in the tables: a mem:// store lives in one process, so separate processes cannot elect over it (its IsLeader figure is above).\n")
	if len(rep.Anomalies) > 0 {
		b.WriteString("\nAnomalies:\n\n")
		for _, s := range rep.Anomalies {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSystems writes the takeover and steady-state tables.
func writeSystems(b *strings.Builder, rep *report) {
	o := rep.Options
	b.WriteString("### Takeover latency (ms)\n\n")
	b.WriteString("Crash: SIGKILL of the leader process → another process's leader callback starts. Handover: SIGTERM of the leader → another process's leader callback starts.\n\n")
	b.WriteString("| system | crash p50 | p90 | p99 | max | handover p50 | p90 | p99 | max |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, s := range rep.Systems {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", s.System.Name,
			msf(s.Crash.P50), msf(s.Crash.P90), msf(s.Crash.P99), msf(s.Crash.Max),
			msf(s.Handover.P50), msf(s.Handover.P90), msf(s.Handover.P99), msf(s.Handover.Max))
	}
	fmt.Fprintf(b, "\nleasehold's own bounds: crash takeover within L + R = %v of the killed leader's last renewal (E6); handover within R = %v of the old leader's unlead (E7).\n\n", o.L+o.R, o.R)
	b.WriteString("| system | crash since last renewal: p50 | max | within L+R | handover since unlead: p50 | p99 | within R |\n|---|--:|--:|:-:|--:|--:|:-:|\n")
	for _, s := range rep.Systems {
		if s.System.Anchor {
			continue
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", s.System.Name,
			msf(s.CrashSinceRenewal.P50), msf(s.CrashSinceRenewal.Max), yes(s.CrashSinceRenewal.Max <= o.L+o.R),
			msf(s.HandoverSinceUnlead.P50), msf(s.HandoverSinceUnlead.P99), yes(s.HandoverSinceUnlead.P99 <= o.R))
	}

	writeSlow(b, rep)

	b.WriteString("\n### Steady state (one lease, nothing happening)\n\n")
	fmt.Fprintf(b, "Backend requests: lock operations for leasehold (a get, create or update: one query, command or HTTP request), HTTP requests for client-go, gRPC calls and stream messages sent for etcd. "+
		"RSS above idle subtracts what an idle worker of the same binary holds (%s: every worker links every client and the embedded etcd server).\n\n", mib(rep.Baseline.RSS))
	b.WriteString("| system | instances | backend requests/s | per instance per R | CPU s per instance-hour | RSS per instance (MiB) | above idle (MiB) |\n|---|--:|--:|--:|--:|--:|--:|\n")
	for _, s := range rep.Systems {
		for _, st := range s.Steady {
			fmt.Fprintf(b, "| %s | %d | %.1f | %.2f | %.1f | %.1f | %.1f |\n", s.System.Name, st.Instances, st.ReqPerSec,
				st.ReqPerSec/float64(st.Instances)*o.R.Seconds(), st.CPUHour, float64(st.RSS)/(1<<20), float64(st.RSS-rep.Baseline.RSS)/(1<<20))
		}
	}
}

// writeMany writes the many-elections table.
func writeMany(b *strings.Builder, rep *report) {
	o := rep.Options
	if len(rep.Many) > 0 {
		b.WriteString("\n### Many elections in one process\n\n")
		fmt.Fprintf(b, "One process, one store connection pool, N Electors on N lease names (L = %v, R = %v); measured over %v once every lease was held (or after the wait for that gave up). A lease needs 1/R = %.0f attempts per second, each one write on the revision its leader holds (a read only after a conflict). "+
			"Rows \"through a Locker\": the N names are keys of one locker.Locker, acquired by a bounded pool of goroutines and not acquired again once lost (lost: Done closings); at the end every key still held was read back from the store.\n\n", o.L, o.R, o.Window, 1/o.R.Seconds())
		b.WriteString("| backend | leases | leading | all led after | requests/s | per lease per s | CPU (% of a core) | CPU s per lease-hour | attempt p50 | p99 | lost leaderships | failed attempts | RSS (MiB) | goroutines |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, r := range rep.Many {
			rps := float64(r.Requests) / r.Window.Seconds()
			backend := r.Backend
			if r.Via == viaLocker {
				backend += " through a Locker"
			}
			fmt.Fprintf(b, "| %s | %d | %d → %d | %.1fs | %.0f | %.2f | %.0f%% | %.2f | %s | %s | %s | %s | %.0f | %d |\n", backend, r.Leases, r.Leading, r.LeadingAtEnd,
				r.ReadyAfter.Seconds(), rps, rps/float64(r.Leases), 100*r.CPU.Seconds()/r.Window.Seconds(), r.CPU.Seconds()/float64(r.Leases)/r.Window.Hours(),
				msf(r.AttemptP50), msf(r.AttemptP99), byReason(r.Lost, r.LostBy), byReason(r.Failed, r.FailedBy), float64(r.RSS)/(1<<20), r.Goroutines)
		}
	}
}

// writeParts writes the partitions table.
func writeParts(b *strings.Builder, rep *report) {
	if len(rep.Parts) == 0 {
		return
	}
	o := rep.Options
	b.WriteString("\n### Partitions\n\n")
	fmt.Fprintf(b, "One process runs N members of one partitioned election of K partitions (partition.Partitions), each member with a store connection of its own (L = %v, R = %v, at most M moves per member per R). "+
		"Even: every partition owned and the members' counts within one of each other. Steady: requests per member per R over %v once even, roster included. "+
		"Join: one more member starts. Crash: a member stops answering (every call fails, its records left as they were). Moved: ownerships that began; gap: how long a partition had no owner. "+
		"Baseline: the same N members each running K independent Electors on K lease names.\n\n", o.L, o.R, o.Window)
	b.WriteString("| backend | K | N | M | even after | per member per R | join: even after | moved | gap max | crash: even after | moved | gap p50 | max | baseline: owned per member | per member per R |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range rep.Parts {
		fmt.Fprintf(b, "| %s | %d | %d | %d | %s | %.1f | %s | %d | %s | %s | %d | %s | %s | %d–%d | %.1f |\n", r.Backend, r.Partitions, r.Members, r.MaxMoves,
			evenAfter(r.Spread, r.SpreadReached), r.PerMemberPerR,
			evenAfter(r.Join.EvenAfter, r.Join.Even), r.Join.Moved, msf(r.Join.GapMax),
			evenAfter(r.Crash.EvenAfter, r.Crash.Even), r.Crash.Moved, msf(r.Crash.GapP50), msf(r.Crash.GapMax),
			r.Baseline.MinOwned, r.Baseline.MaxOwned, r.Baseline.PerMemberPerR)
	}
}

// evenAfter formats the time to an even spread, or says the wait gave up.
func evenAfter(d time.Duration, ok bool) string {
	if !ok {
		return fmt.Sprintf("not within %.0fs", d.Seconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// byReason formats a count with its breakdown by reason: "12 (deadline 10, late 2)".
func byReason(n int64, by map[string]int64) string {
	if n == 0 || len(by) == 0 {
		return fmt.Sprint(n)
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(by)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, by[k]))
	}
	return fmt.Sprintf("%d (%s)", n, strings.Join(parts, ", "))
}

// writeRatios writes leasehold's figures divided by each anchor's: below 1, leasehold is
// faster or cheaper.
func writeRatios(b *strings.Builder, rep *report) {
	var anchors []sysResult
	for _, s := range rep.Systems {
		if s.System.Anchor {
			anchors = append(anchors, s)
		}
	}
	if len(anchors) == 0 {
		return
	}
	b.WriteString("\n### Ratios: leasehold ÷ anchor (below 1: leasehold is faster or cheaper)\n\n")
	b.WriteString("| leasehold over | anchor | crash p50 | crash max | handover p50 | handover p99 | requests/s | CPU per instance-hour | RSS above idle |\n|---|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, s := range rep.Systems {
		if s.System.Anchor {
			continue
		}
		for _, a := range anchors {
			st, ast := firstSteady(s), firstSteady(a)
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", strings.TrimPrefix(s.System.Name, "leasehold/"), a.System.Name,
				ratio(float64(s.Crash.P50), float64(a.Crash.P50)), ratio(float64(s.Crash.Max), float64(a.Crash.Max)),
				ratio(float64(s.Handover.P50), float64(a.Handover.P50)), ratio(float64(s.Handover.P99), float64(a.Handover.P99)),
				ratio(st.ReqPerSec, ast.ReqPerSec), ratio(st.CPUHour, ast.CPUHour),
				ratio(float64(st.RSS-rep.Baseline.RSS), float64(ast.RSS-rep.Baseline.RSS)))
		}
	}
	if len(rep.Options.Instances) > 0 {
		fmt.Fprintf(b, "\nSteady-state ratios at %d instances.\n", rep.Options.Instances[0])
	}
}

func firstSteady(s sysResult) steadyResult {
	if len(s.Steady) == 0 {
		return steadyResult{}
	}
	return s.Steady[0]
}

func ratio(a, b float64) string {
	if b <= 0 || a < 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func msf(d time.Duration) string {
	if d == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", float64(d)/float64(time.Millisecond))
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// writeFiles writes results.md, results.json and latency.svg into dir.
func writeFiles(dir string, rep *report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var md strings.Builder
	if err := writeMarkdown(&md, rep); err != nil {
		return err
	}
	if len(rep.Systems) > 0 {
		md.WriteString("\n![latency distributions](latency.svg)\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "results.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	if len(rep.Systems) == 0 {
		return nil // no latency measured: no plot
	}
	return os.WriteFile(filepath.Join(dir, "latency.svg"), []byte(latencySVG(rep)), 0o644)
}

// writeSlow lists the handover trials above slowHandover, with the CPU pressure during each.
func writeSlow(b *strings.Builder, rep *report) {
	var lines []string
	for _, s := range rep.Systems {
		for _, n := range s.SlowHandovers {
			lines = append(lines, fmt.Sprintf("- %s: %s\n", s.System.Name, n))
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(b, "\nHandover trials above %v, each with the time during which runnable tasks waited for a CPU meanwhile (Linux CPU pressure: near the trial's length, the machine, not the election, held it up):\n\n", slowHandover)
	for _, l := range lines {
		b.WriteString(l)
	}
}
