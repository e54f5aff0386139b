package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

const statusUsage = `Usage: leasehold status [flags] [--json] [--watch]

Shows who holds the lease: holder, term, when it was acquired and last renewed, and whether it
looks expired (the last renewal is older than the lease's duration, by this host's clock: an
estimate, since the holder wrote the time with its own clock). Exit status 0 when someone holds
the lease, 3 when nobody does (no record, released, or expired).

With --watch, status reads the lease every --interval and prints one line each time its holder,
its term or a pending resign changes (the first line is the lease as first read; a renewal
prints nothing),
until SIGINT or SIGTERM, which exit 0. A read that fails is logged on stderr and the watch
goes on. It never joins the election. A change that comes and goes between two reads is not
seen, and a crashed holder's lease stays held until another instance takes it over.

Flags:
  --json                  print the status as one JSON object; with --watch, one per line
  --watch                 print each change of holder, term or resign, until interrupted
  --interval D            with --watch, the time between two reads (default 1s)
  --timeout D             give up reading the lease after D (default 10s); with --watch,
                          each read
` + commonFlagsUsage

// leaseStatus is what status prints; its JSON form is the --json output and the /status
// endpoint's "lease" field.
type leaseStatus struct {
	Lease         string     `json:"lease"`
	Store         string     `json:"store"`
	Exists        bool       `json:"exists"`
	Held          bool       `json:"held"`
	Holder        string     `json:"holder"`
	Term          uint64     `json:"term"`
	AcquiredAt    *time.Time `json:"acquiredAt,omitempty"`
	RenewedAt     *time.Time `json:"renewedAt,omitempty"`
	RenewedAgo    float64    `json:"renewedAgoSeconds"` // age of the last renewal, by this host's clock
	LeaseDuration float64    `json:"leaseDurationSeconds"`
	Expired       bool       `json:"expired"`
	State         string     `json:"state"` // held, expired, released, missing
	// A resign (R1-R3): the request the holder has not acted on yet, and the next holder it
	// names (held) or the instance the release is reserved for (released).
	ResignRequested *time.Time `json:"resignRequestedAt,omitempty"`
	NextHolder      string     `json:"nextHolder,omitempty"`
}

func statusCommand(args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	var f commonFlags
	f.register(fs)
	asJSON := fs.Bool("json", false, "")
	timeout := fs.Duration("timeout", 10*time.Second, "")
	watch := fs.Bool("watch", false, "")
	interval := fs.Duration("interval", time.Second, "")
	if help, err := parseFlags(fs, args, statusUsage); help || err != nil {
		if help {
			fmt.Fprint(stdout, statusUsage)
		}
		return exitOK, err
	}
	if fs.NArg() > 0 {
		return 0, badInput(statusUsage, "status takes no arguments, got %q", fs.Arg(0))
	}
	if err := f.validate(fs, statusUsage); err != nil {
		return 0, err
	}
	if *timeout <= 0 {
		return 0, badInput(statusUsage, "--timeout %v must be positive", *timeout)
	}
	intervalSet := false
	fs.Visit(func(fl *flag.Flag) { intervalSet = intervalSet || fl.Name == "interval" })
	if intervalSet && !*watch {
		return 0, badInput(statusUsage, "--interval is the time between two reads of --watch: give --watch")
	}
	if *interval <= 0 {
		return 0, badInput(statusUsage, "--interval %v must be positive", *interval)
	}
	if *watch {
		return watchStatus(&f, *asJSON, *interval, *timeout, stdout, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	r, err := newLeaseReader(ctx, &f, statusUsage)
	if err != nil {
		return 0, err
	}
	defer r.close(context.WithoutCancel(ctx))
	rec, err := r.lock.Get(ctx, r.lease)
	st := leaseStatus{Lease: r.lease, Store: r.where}
	switch {
	case errors.Is(err, cluster.ErrNotFound):
		st.State = "missing"
	case err != nil:
		return 0, fmt.Errorf("lease %q in %s: %w", r.lease, r.where, err)
	default:
		st = describeRecord(r.lease, r.where, rec, time.Now())
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(st); err != nil {
			return 0, err
		}
	} else {
		printStatus(stdout, st)
	}
	if st.Held {
		return exitOK, nil
	}
	return exitNoLease, nil
}

// describeRecord judges a lease record at now.
func describeRecord(lease, where string, rec cluster.Record, now time.Time) leaseStatus {
	st := leaseStatus{
		Lease: lease, Store: where, Exists: true, Holder: rec.Holder, Term: rec.Term,
		LeaseDuration: rec.Duration.Seconds(),
	}
	if !rec.AcquiredAt.IsZero() {
		t := rec.AcquiredAt.UTC()
		st.AcquiredAt = &t
	}
	if !rec.RenewedAt.IsZero() {
		t := rec.RenewedAt.UTC()
		st.RenewedAt = &t
		st.RenewedAgo = now.Sub(t).Seconds()
	}
	if cluster.ResignPending(rec) {
		t := rec.ResignRequested.UTC()
		st.ResignRequested = &t
	}
	if rec.Holder == "" || st.ResignRequested != nil {
		st.NextHolder = rec.NextHolder
	}
	switch {
	case rec.Holder == "":
		st.State = "released"
	case rec.Duration > 0 && !rec.RenewedAt.IsZero() && now.Sub(rec.RenewedAt) > rec.Duration:
		st.State, st.Expired = "expired", true
	default:
		st.State, st.Held = "held", true
	}
	return st
}

func printStatus(w io.Writer, st leaseStatus) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	defer tw.Flush()
	fmt.Fprintf(tw, "lease:\t%s\n", st.Lease)
	fmt.Fprintf(tw, "store:\t%s\n", st.Store)
	switch st.State {
	case "missing":
		fmt.Fprintf(tw, "state:\tmissing (no instance has taken this lease yet)\n")
		return
	case "released":
		if st.NextHolder != "" {
			fmt.Fprintf(tw, "state:\treleased (its last holder resigned, handing it over to the next holder below)\n")
			break
		}
		fmt.Fprintf(tw, "state:\treleased (its last holder stopped cleanly; the next attempt of any instance takes it)\n")
	case "expired":
		fmt.Fprintf(tw, "state:\texpired (not renewed for longer than its duration: its holder may have crashed)\n")
		fmt.Fprintf(tw, "holder:\t%s\n", st.Holder)
	default:
		fmt.Fprintf(tw, "state:\theld\n")
		fmt.Fprintf(tw, "holder:\t%s\n", st.Holder)
	}
	fmt.Fprintf(tw, "term:\t%d\n", st.Term)
	if st.AcquiredAt != nil {
		fmt.Fprintf(tw, "acquired:\t%s\n", st.AcquiredAt.Format(time.RFC3339Nano))
	}
	if st.RenewedAt != nil {
		label := "renewed:" // a release writes the time of the release
		if st.State == "released" {
			label = "released:"
		}
		fmt.Fprintf(tw, "%s\t%s (%s ago)\n", label, st.RenewedAt.Format(time.RFC3339Nano), roundAge(st.RenewedAgo))
	}
	if st.LeaseDuration > 0 {
		fmt.Fprintf(tw, "duration:\t%v\n", time.Duration(st.LeaseDuration*float64(time.Second)))
	}
	switch {
	case st.ResignRequested != nil && st.NextHolder != "":
		fmt.Fprintf(tw, "resign:\trequested %s (%s ago), to hand over to %s\n", st.ResignRequested.Format(time.RFC3339Nano),
			roundAge(time.Since(*st.ResignRequested).Seconds()), st.NextHolder)
	case st.ResignRequested != nil:
		fmt.Fprintf(tw, "resign:\trequested %s (%s ago)\n", st.ResignRequested.Format(time.RFC3339Nano),
			roundAge(time.Since(*st.ResignRequested).Seconds()))
	case st.NextHolder != "":
		fmt.Fprintf(tw, "next holder:\t%s (only it may take the lease until it has stayed released for the lease duration)\n", st.NextHolder)
	}
}

func roundAge(seconds float64) time.Duration {
	d := time.Duration(seconds * float64(time.Second))
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}
