// Command faults runs the fault campaign over one or more leasehold backends and
// writes a Markdown and JSON report with an SVG timeline per backend.
//
//	go run ./faults --backend file,postgres --duration 10m --out docs/faults
//	go run ./faults --ci        # every backend reachable here, the CI bounds, fails on a violation
//	go run ./faults --backend postgres --locker  # the workers hold the lease through a locker.Locker
//	go run ./faults --backend file --ranked      # priorities, stability windows, health checks, preemptions
//	go run ./faults --soak      # 1,000 faults per backend and cluster, a report each under docs/faults/soak
//
// It exits 1 when a campaign found a violation, 2 on a usage or setup error, 130 when
// interrupted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/leasehold/leasehold/faults/campaign"
)

func main() {
	campaign.MaybeWorker()
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("faults", flag.ContinueOnError)
	backend := fs.String("backend", "", "comma-separated backends ("+strings.Join(campaign.Backends(), ", ")+"), or all; default all with --ci, file without")
	duration := fs.Duration("duration", 0, "how long faults are injected per backend (default 60s)")
	instances := fs.Int("instances", 3, "worker processes per backend")
	seed := fs.Uint64("seed", 0, "seed of the fault schedule (0: random, reported)")
	minFaults := fs.Int("min-faults", 0, "inject at least this many faults per backend, past --duration if need be (--ci: 50)")
	maxDuration := fs.Duration("max-duration", 0, "end the faults of a backend after this long even short of --min-faults, and report (0: no limit)")
	lease := fs.Duration("lease", time.Second, "lease duration L")
	renew := fs.Duration("renew", 250*time.Millisecond, "renew interval R")
	slack := fs.Duration("slack", campaign.DefaultSlack, "slack added to every takeover bound")
	ci := fs.Bool("ci", false, "CI mode: 3 instances, L=1s, R=250ms, at least 50 faults per backend, every reachable backend; unreachable ones are skipped unless LEASEHOLD_REQUIRE_SERVERS=1 (LEASEHOLD_REQUIRE_KUBE=1 for kubernetes)")
	out := fs.String("out", "", "directory for report.md, report.json and the SVG timelines (default: none, summary only; --soak: docs/faults/soak)")
	quiet := fs.Bool("quiet", false, "do not log each fault")
	locker := fs.Bool("locker", false, "the workers hold the lease through a locker.Locker (Acquire, act while held, acquire again when lost) instead of an Elector")
	ranked := fs.Bool("ranked", false, "ranked mode: each worker has its slot's priority, a stability window and a health check the runner makes fail; adds the faults health-leader, preempt and health-follower, each with its bound (U2; Q2, Q3)")
	window := fs.Duration("stability-window", 0, "with --ranked: the workers' stability window (default 2 × --lease)")
	healthFailures := fs.Int("health-failures", 0, "with --ranked: failed checks that make a leader unhealthy (default 2)")
	soakMode := fs.Bool("soak", false, "soak: every backend and store cluster (or --backend), at least 1,000 faults each (--min-faults), one report per backend under --out/<backend> (default docs/faults/soak), with the logs when a rule broke; a backend whose finished report is there is skipped, so an interrupted soak resumes")
	redo := fs.Bool("redo", false, "with --soak: run the backends whose finished report is there again")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "faults: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	names := *backend
	if names == "" || names == "all" {
		names = "file"
		if *ci || *backend == "all" {
			names = strings.Join(campaign.Backends(), ",")
		}
	}
	if *ci {
		*instances, *lease, *renew = 3, time.Second, 250*time.Millisecond
		*minFaults = max(*minFaults, 50)
	}
	if !*ranked && (*window != 0 || *healthFailures != 0) {
		fmt.Fprintln(os.Stderr, "faults: --stability-window and --health-failures go with --ranked")
		return 2
	}
	if *redo && !*soakMode {
		fmt.Fprintln(os.Stderr, "faults: --redo goes with --soak")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	if *soakMode {
		if *ci {
			fmt.Fprintln(os.Stderr, "faults: --soak and --ci do not go together")
			return 2
		}
		if *minFaults == 0 {
			*minFaults = soakMinFaults
		}
		if *backend == "" {
			names = strings.Join(campaign.Backends(), ",") // the store clusters among them
		}
		if *out == "" {
			*out = filepath.Join(repoRoot(), "docs", "faults", "soak")
		}
		s := &soak{
			out: *out, redo: *redo, run: campaign.Run, required: campaign.Required, stderr: os.Stderr,
			o: campaign.Options{
				Duration: *duration, MinFaults: *minFaults, MaxDuration: *maxDuration, Instances: *instances, Seed: *seed,
				LeaseDuration: *lease, RenewInterval: *renew, Slack: *slack, Locker: *locker,
				Ranked: *ranked, StabilityWindow: *window, HealthFailures: *healthFailures,
			},
		}
		for _, n := range strings.Split(names, ",") {
			n = strings.TrimSpace(n)
			if !slices.Contains(campaign.Backends(), n) {
				fmt.Fprintf(os.Stderr, "faults: unknown backend %q (known: %s)\n", n, strings.Join(campaign.Backends(), ", "))
				return 2
			}
			s.names = append(s.names, n)
		}
		if !*quiet {
			s.o.Logf = logf
		}
		reps, status := s.do(ctx)
		if len(reps) > 0 {
			if err := campaign.WriteMarkdown(os.Stdout, "", reps, nil); err != nil {
				fmt.Fprintln(os.Stderr, "faults:", err)
				return 2
			}
		}
		return status
	}
	var reps []*campaign.Report
	failed := false
	for _, name := range strings.Split(names, ",") {
		o := campaign.Options{
			Backend: strings.TrimSpace(name), Duration: *duration, MinFaults: *minFaults, MaxDuration: *maxDuration, Instances: *instances, Seed: *seed,
			LeaseDuration: *lease, RenewInterval: *renew, Slack: *slack, Locker: *locker,
			Ranked: *ranked, StabilityWindow: *window, HealthFailures: *healthFailures,
		}
		if !*quiet {
			o.Logf = logf
		}
		rep, err := campaign.Run(ctx, o)
		switch {
		case ctx.Err() != nil:
			fmt.Fprintln(os.Stderr, "faults: interrupted; every worker and temporary file is cleaned up")
			return 130
		case errors.Is(err, campaign.ErrUnavailable) && *ci && !campaign.Required(o.Backend):
			fmt.Fprintf(os.Stderr, "faults: skipping %s: %v\n", o.Backend, err)
			continue
		case err != nil:
			fmt.Fprintf(os.Stderr, "faults: %v\n", err)
			return 2
		}
		reps = append(reps, rep)
		fmt.Fprintf(os.Stderr, "faults: %s: %d faults, %d violations\n", rep.Name(), len(rep.Faults), len(rep.Violations))
		for _, v := range rep.Violations {
			fmt.Fprintf(os.Stderr, "  VIOLATION: %s\n", v)
		}
		failed = failed || rep.Failed()
	}
	if err := campaign.WriteMarkdown(os.Stdout, "", reps, nil); err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 2
	}
	if *out != "" {
		if err := campaign.WriteFiles(*out, "go run ./faults "+strings.Join(os.Args[1:], " "), reps); err != nil {
			fmt.Fprintf(os.Stderr, "faults: --out %s: %v\n", *out, err)
			return 2
		}
	}
	if failed {
		return 1
	}
	return 0
}
