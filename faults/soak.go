package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/leasehold/leasehold/faults/campaign"
)

// soakMinFaults is the soak's number of faults per backend unless --min-faults says otherwise:
// the depth the CI mode's short campaigns (every kind once) leave out.
const soakMinFaults = 1000

// soak runs the campaign over each backend in turn, at least o.MinFaults faults each, and
// keeps each backend's report in a directory of its own under out (out/<name>: report.md,
// report.json, the timeline, and logs/ when a rule broke). A backend whose directory holds a
// finished report (soakFinished) is skipped unless redo: a soak of hours is resumed backend
// by backend after an interruption or a reboot.
type soak struct {
	out   string
	names []string         // the backends, in order
	o     campaign.Options // every backend's options but Backend and KeepLogs
	redo  bool
	// run is campaign.Run; required is campaign.Required (a test stands in for both).
	run      func(context.Context, campaign.Options) (*campaign.Report, error)
	required func(backend string) bool
	stderr   io.Writer
}

// soakDir names a backend's directory: its report's name (the backend, "-locker" in the
// Locker mode, "-ranked" in the Ranked mode).
func (s *soak) soakDir(name string) string {
	r := campaign.Report{Backend: name, Locker: s.o.Locker, Partitions: s.o.Partitions, Ranked: s.o.Ranked}
	return filepath.Join(s.out, r.Name())
}

// soakFinished reports whether dir holds the report of a run that is done: at least
// minFaults faults, or a broken rule (the run that found it is kept, logs and all, until
// --redo). A report cut short by --max-duration, a run interrupted before its report, or a
// report of fewer faults than now asked is not done.
func soakFinished(dir string, minFaults int) (bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var reps []*campaign.Report
	if err := json.Unmarshal(b, &reps); err != nil {
		return false, fmt.Errorf("%s: %w", filepath.Join(dir, "report.json"), err)
	}
	if len(reps) != 1 {
		return false, fmt.Errorf("%s: %d reports, want one", filepath.Join(dir, "report.json"), len(reps))
	}
	return len(reps[0].Faults) >= minFaults || reps[0].Failed(), nil
}

// do runs the soak. It returns the reports of the backends it ran and the command's exit
// status: 0, 1 when a campaign broke a rule, 2 when one could not run (the others still do),
// 130 when interrupted (the backend under way has no report: the next soak runs it again).
func (s *soak) do(ctx context.Context) ([]*campaign.Report, int) {
	var reps []*campaign.Report
	status := 0
	for _, name := range s.names {
		dir := s.soakDir(name)
		done, err := soakFinished(dir, s.o.MinFaults)
		if err != nil {
			fmt.Fprintf(s.stderr, "faults: soak %s: %v\n", name, err)
			status = max(status, 2)
			continue
		}
		if done && !s.redo {
			fmt.Fprintf(s.stderr, "faults: soak %s: finished report in %s, skipped (--redo runs it again)\n", name, dir)
			continue
		}
		// The run writes next to the directory and takes its place once its report is
		// whole: an interruption leaves the former report, or none.
		next := dir + ".next"
		if err := os.RemoveAll(next); err != nil {
			fmt.Fprintf(s.stderr, "faults: soak %s: %v\n", name, err)
			status = max(status, 2)
			continue
		}
		o := s.o
		o.Backend, o.KeepLogs = name, filepath.Join(next, "logs")
		rep, err := s.run(ctx, o)
		switch {
		case ctx.Err() != nil:
			os.RemoveAll(next)
			fmt.Fprintf(s.stderr, "faults: soak interrupted during %s; the next soak starts it again\n", name)
			return reps, 130
		case errors.Is(err, campaign.ErrUnavailable) && !s.required(name):
			fmt.Fprintf(s.stderr, "faults: soak: skipping %s: %v\n", name, err)
			continue
		case err != nil:
			fmt.Fprintf(s.stderr, "faults: soak %s: %v\n", name, err)
			status = max(status, 2)
			continue
		}
		cmd := fmt.Sprintf("go run ./faults --soak --backend %s --min-faults %d", name, o.MinFaults)
		if o.Locker {
			cmd += " --locker"
		}
		if o.Ranked {
			cmd += " --ranked"
		}
		if o.Instances != 3 {
			cmd += " --instances " + strconv.Itoa(o.Instances)
		}
		if err := s.keep(dir, next, cmd, rep); err != nil {
			fmt.Fprintf(s.stderr, "faults: soak %s: %v\n", name, err)
			status = max(status, 2)
			continue
		}
		reps = append(reps, rep)
		fmt.Fprintf(s.stderr, "faults: soak %s: %d faults, %d violations; report in %s\n", name, len(rep.Faults), len(rep.Violations), dir)
		for _, v := range rep.Violations {
			fmt.Fprintf(s.stderr, "  VIOLATION: %s\n", v)
		}
		if rep.Failed() {
			status = max(status, 1)
		}
	}
	return reps, status
}

// keep writes the report into next, then puts next in dir's place.
func (s *soak) keep(dir, next, cmd string, rep *campaign.Report) error {
	if err := campaign.WriteFiles(next, cmd, []*campaign.Report{rep}); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(next, dir)
}

// repoRoot returns the directory above the working directory that holds go.work (the
// repository's root, where docs/ is), or the working directory itself.
func repoRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return wd
		}
	}
}
