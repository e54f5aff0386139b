package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/cluster/holders"
	"github.com/leasehold/leasehold/cluster/partition"
)

const statusUsage = `Usage: leasehold status [flags] [--json] [--watch]

Shows who holds the lease: holder, term, when it was acquired and last renewed, and whether it
looks expired (the last renewal is older than the lease's duration, by this host's clock: an
estimate, since the holder wrote the time with its own clock). Exit status 0 when someone holds
the lease, 3 when nobody does (no record, released, or expired).

A lease run with --holders N has no record of its own name but one per slot, NAME/0 to
NAME/N-1: status then shows each slot and its holder, and exits 0 when any slot is held.
Without --holders it looks for slots from 0 up until one is missing; --holders N reads the N
slots (a slot that was never taken, then, shows as missing).

A lease run with --partitions K: --partitions K shows each partition's record, NAME/0 to
NAME/K-1, its owner and term, and the members in the roster NAME.members (an entry is removed
when its member stops; a crashed member's stays listed: one read cannot tell it from a live
one). It exits 0 when any partition is owned.

With --watch, status reads the lease every --interval and prints one line each time its holder,
its term, a pending resign or the holder's priority or health changes (the first line is the
lease as first read; a renewal that changes none of them prints nothing),
until SIGINT or SIGTERM, which exit 0. A read that fails is logged on stderr and the watch
goes on. It never joins the election. A change that comes and goes between two reads is not
seen, and a crashed holder's lease stays held until another instance takes it over.

Flags:
  --json                  print the status as one JSON object; with --watch, one per line
  --watch                 print each change of holder, term or resign, until interrupted
  --interval D            with --watch, the time between two reads (default 1s)
  --timeout D             give up reading the lease after D (default 10s); with --watch,
                          each read
  --holders N             the lease's number of holders (run --holders N): show its N slots
                          (not with --watch)
  --partitions K          the lease's number of partitions (run --partitions K): show each
                          partition's owner and term, and the roster's members (not with
                          --watch or --holders)
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
	// A lease of N holders (H1): its slots, each as a lease of its own (its record NAME/i); the
	// lease is held when any slot is. Slot is the slot's number, in Slots.
	Slots []leaseStatus `json:"slots,omitempty"`
	Slot  *int          `json:"slot,omitempty"`
	// A partitioned election of K partitions (D6): its partitions, each as a lease of its own
	// (SlotName), and the members in its roster (D5). Partition is the partition's number.
	Partitions []leaseStatus `json:"partitions,omitempty"`
	Partition  *int          `json:"partition,omitempty"`
	Members    []string      `json:"members,omitempty"`
	// Value is what the holder publishes for its term (run --advertise, V1), "" for nothing.
	Value string `json:"value,omitempty"`
	// The holder's priority (run --priority), and whether it reports itself unhealthy (its
	// last --health-failures checks failed), for its term (Q1, U2).
	Priority  int  `json:"priority"`
	Unhealthy bool `json:"unhealthy"`
	// A preemption (Q2, Q4): the pending resign request, or the release answering it, was
	// written by NextHolder, a candidate of priority NextPriority asking the holder to hand
	// over to it.
	Preempt      bool `json:"preempt,omitempty"`
	NextPriority *int `json:"nextPriority,omitempty"`
}

func statusCommand(args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	var f commonFlags
	f.register(fs)
	asJSON := fs.Bool("json", false, "")
	timeout := fs.Duration("timeout", 10*time.Second, "")
	watch := fs.Bool("watch", false, "")
	interval := fs.Duration("interval", time.Second, "")
	holders := fs.Int("holders", 0, "")
	partitions := fs.Int("partitions", 0, "")
	if done, err := parseCommand(fs, args, statusUsage, stdout); done || err != nil {
		return exitOK, err
	}
	if err := f.validate(fs, statusUsage); err != nil {
		return 0, err
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if err := checkStatusFlags(set, *timeout, *watch, *interval, *holders, *partitions); err != nil {
		return 0, err
	}
	partitionsSet, holdersSet := set["partitions"], set["holders"]
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
	var st leaseStatus
	switch {
	case partitionsSet:
		st, err = readPartitions(ctx, r, *partitions)
	case *holders > 1:
		st, err = readSlots(ctx, r, *holders)
	default:
		st, err = readLease(ctx, r, !holdersSet)
	}
	if err != nil {
		return 0, err
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

// checkStatusFlags refuses status's flags that are out of range or contradict each other; set
// holds the flags given.
func checkStatusFlags(set map[string]bool, timeout time.Duration, watch bool, interval time.Duration, holders, partitions int) error {
	if timeout <= 0 {
		return badInput(statusUsage, "--timeout %v must be positive", timeout)
	}
	if set["interval"] && !watch {
		return badInput(statusUsage, "--interval is the time between two reads of --watch: give --watch")
	}
	if interval <= 0 {
		return badInput(statusUsage, "--interval %v must be positive", interval)
	}
	if set["holders"] && holders < 1 {
		return badInput(statusUsage, "--holders %d must be at least 1", holders)
	}
	if set["holders"] && watch {
		return badInput(statusUsage, "--holders cannot be used with --watch")
	}
	if set["partitions"] {
		switch {
		case partitions < 1:
			return badInput(statusUsage, "--partitions %d must be at least 1", partitions)
		case set["holders"]:
			return badInput(statusUsage, "--partitions cannot be used with --holders")
		case watch:
			return badInput(statusUsage, "--partitions cannot be used with --watch")
		}
	}
	return nil
}

// readLease reads the lease's record; when it is missing and findSlots, the slots of a lease of
// N holders (H1), from 0 up until one is missing.
func readLease(ctx context.Context, r *leaseReader, findSlots bool) (leaseStatus, error) {
	rec, err := r.lock.Get(ctx, r.lease)
	switch {
	case errors.Is(err, cluster.ErrNotFound):
	case err != nil:
		return leaseStatus{}, fmt.Errorf("lease %q in %s: %w", r.lease, r.where, err)
	default:
		return describeRecord(r.lease, r.where, rec, time.Now()), nil
	}
	if findSlots {
		if st, err := readSlots(ctx, r, 0); err != nil || len(st.Slots) > 0 {
			return st, err
		}
	}
	return leaseStatus{Lease: r.lease, Store: r.where, State: "missing"}, nil
}

// readSlots reads the slots of the lease of n holders, or, for n 0, from slot 0 up until one is
// missing. The lease is held when any slot is; otherwise its state is the most telling of its
// slots': expired, released, missing.
func readSlots(ctx context.Context, r *leaseReader, n int) (leaseStatus, error) {
	st := leaseStatus{Lease: r.lease, Store: r.where}
	now := time.Now()
	for i := 0; n == 0 || i < n; i++ {
		slot, found, err := readPart(ctx, r, "slot", i, max(n, 2), now)
		switch {
		case err != nil:
			return leaseStatus{}, err
		case !found && n == 0:
			return summarize(st), nil // the first slot missing: the last of them, presumably
		}
		slot.Slot = &i
		st.Slots = append(st.Slots, slot)
		st.Exists = st.Exists || slot.Exists
		st.Held = st.Held || slot.Held
	}
	return summarize(st), nil
}

// readPart reads the record of slot or partition i of k (what says which), as a status of its
// own, state "missing" and found false when there is none.
func readPart(ctx context.Context, r *leaseReader, what string, i, k int, now time.Time) (st leaseStatus, found bool, err error) {
	name := holders.SlotName(r.lock, r.lease, i, k)
	rec, err := r.lock.Get(ctx, name)
	switch {
	case errors.Is(err, cluster.ErrNotFound):
		return leaseStatus{Lease: name, Store: r.where, State: "missing"}, false, nil
	case err != nil:
		return leaseStatus{}, false, fmt.Errorf("lease %q in %s: %s %d (%s): %w", r.lease, r.where, what, i, name, err)
	}
	return describeRecord(name, r.where, rec, now), true, nil
}

// summarize sets the state of a lease of N holders from its slots': held when any slot is held,
// else expired, released or missing, the first that any slot is.
func summarize(st leaseStatus) leaseStatus {
	st.State = "missing"
	for _, want := range []string{"released", "expired", "held"} {
		for _, slot := range st.Slots {
			if slot.State == want {
				st.State = want
			}
		}
	}
	return st
}

// utcOrNil returns t in UTC, or nil when it is zero: a time field of the JSON status, left
// out when unknown.
func utcOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// describeRecord judges a lease record at now.
func describeRecord(lease, where string, rec cluster.Record, now time.Time) leaseStatus {
	st := leaseStatus{
		Lease: lease, Store: where, Exists: true, Holder: rec.Holder, Term: rec.Term,
		LeaseDuration: rec.Duration.Seconds(),
	}
	st.AcquiredAt, st.RenewedAt = utcOrNil(rec.AcquiredAt), utcOrNil(rec.RenewedAt)
	if st.RenewedAt != nil {
		st.RenewedAgo = now.Sub(*st.RenewedAt).Seconds()
	}
	st.Value = rec.CurrentValue()
	if cluster.ResignPending(rec) {
		t := rec.ResignRequested.UTC()
		st.ResignRequested = &t
	}
	if rec.Holder == "" || st.ResignRequested != nil {
		st.NextHolder = rec.NextHolder
	}
	st.Priority, st.Unhealthy = rec.CurrentPriority()
	if rec.Preempt && st.NextHolder != "" {
		p := rec.NextPriority
		st.Preempt, st.NextPriority = true, &p
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
	if st.Slots != nil {
		printSlots(tw, st)
		return
	}
	if st.Partitions != nil {
		printPartitions(tw, st)
		return
	}
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
	if st.Value != "" {
		fmt.Fprintf(tw, "value:\t%s\n", st.Value)
	}
	switch {
	case st.Unhealthy:
		fmt.Fprintf(tw, "priority:\t%d, unhealthy (its last health checks failed: it hands over to the first healthy candidate that asks)\n", st.Priority)
	case st.Priority != 0:
		fmt.Fprintf(tw, "priority:\t%d\n", st.Priority)
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
	if st.Preempt {
		fmt.Fprintf(tw, "preempt:\tby %s, of priority %d\n", st.NextHolder, *st.NextPriority)
	}
}

// readPartitions reads the k partitions of a partitioned election, and its roster's members
// when the Lock keeps a roster. The election is held when any partition is owned; otherwise
// its state is the most telling of its partitions', as for slots.
func readPartitions(ctx context.Context, r *leaseReader, k int) (leaseStatus, error) {
	st := leaseStatus{Lease: r.lease, Store: r.where}
	now := time.Now()
	members := make(map[string]*cluster.Record) // member leases read, nil when missing
	for i := range k {
		name := holders.SlotName(r.lock, r.lease, i, k)
		rec, err := r.lock.Get(ctx, name)
		var part leaseStatus
		switch {
		case errors.Is(err, cluster.ErrNotFound):
			part = leaseStatus{Lease: name, Store: r.where, State: "missing"}
		case err != nil:
			return leaseStatus{}, fmt.Errorf("lease %q in %s: partition %d (%s): %w", r.lease, r.where, i, name, err)
		default:
			// A partition's record is written only when its owner changes: it is held
			// through its owner's member lease, whose renewals say whether it still is.
			if ml, term, ok := partition.MemberLease(r.lease, rec); ok {
				m, seen := members[ml]
				if !seen {
					mrec, err := r.lock.Get(ctx, ml)
					switch {
					case errors.Is(err, cluster.ErrNotFound):
					case err != nil:
						return leaseStatus{}, fmt.Errorf("lease %q in %s: partition %d: member lease %s: %w", r.lease, r.where, i, ml, err)
					default:
						m = &mrec
					}
					members[ml] = m
				}
				ended := m == nil || m.Holder != rec.Holder || m.Term != term
				if !ended {
					rec.RenewedAt, rec.Duration = m.RenewedAt, m.Duration
				}
				part = describeRecord(name, r.where, rec, now)
				switch {
				case ended && m != nil && m.Holder == "" && m.Term == term:
					// Its owner stopped: releasing its member lease released its partitions.
					part.State, part.Expired, part.Held = "released", false, false
				case ended: // its owner's leadership ended otherwise: the partition is free
					part.State, part.Expired, part.Held = "expired", true, false
				}
			} else {
				part = describeRecord(name, r.where, rec, now)
			}
		}
		part.Partition = &i
		st.Partitions = append(st.Partitions, part)
		st.Exists = st.Exists || part.Exists
		st.Held = st.Held || part.Held
	}
	if roster, ok := r.lock.(cluster.Roster); ok {
		ms, err := roster.Members(ctx, partition.RosterName(r.lease))
		if err != nil {
			return leaseStatus{}, fmt.Errorf("lease %q in %s: roster %s: %w", r.lease, r.where, partition.RosterName(r.lease), err)
		}
		st.Members = []string{}
		for _, m := range ms {
			st.Members = append(st.Members, m.ID)
		}
		slices.Sort(st.Members)
	}
	st.Slots, st.State = st.Partitions, "" // summarize reads Slots
	st = summarize(st)
	st.Slots = nil
	return st, nil
}

// printPartitions prints the partitions of a partitioned election, one line each, and the
// members of its roster.
func printPartitions(tw io.Writer, st leaseStatus) {
	owned := 0
	for _, p := range st.Partitions {
		if p.Held {
			owned++
		}
	}
	fmt.Fprintf(tw, "state:\t%s (%d of %d partitions owned)\n", st.State, owned, len(st.Partitions))
	if st.Members != nil {
		members := "none"
		if len(st.Members) > 0 {
			members = strings.Join(st.Members, ", ")
		}
		fmt.Fprintf(tw, "members:\t%s\n", members)
	}
	for _, p := range st.Partitions {
		line := partLine(p, "owned", "owner")
		if p.State == "released" && p.NextHolder != "" {
			line += ", handed over to " + p.NextHolder
		}
		fmt.Fprintf(tw, "partition %d:\t%s\t(%s)\n", *p.Partition, line, p.Lease)
	}
}

// partLine describes a slot's or a partition's record in a few words: held (or owned, as
// verb says) by whom, expired, released, missing.
func partLine(p leaseStatus, verb, holder string) string {
	switch p.State {
	case "held":
		return fmt.Sprintf("%s by %s, term %d", verb, p.Holder, p.Term)
	case "expired":
		return fmt.Sprintf("expired (its %s may have crashed), last %s by %s, term %d", holder, verb, p.Holder, p.Term)
	case "released":
		return fmt.Sprintf("released, term %d", p.Term)
	}
	return p.State
}

// printSlots prints the slots of a lease of N holders, one line each.
func printSlots(tw io.Writer, st leaseStatus) {
	held := 0
	for _, s := range st.Slots {
		if s.Held {
			held++
		}
	}
	fmt.Fprintf(tw, "state:\t%s (%d of %d slots held)\n", st.State, held, len(st.Slots))
	for _, s := range st.Slots {
		line := partLine(s, "held", "holder")
		if s.RenewedAt != nil && s.State != "released" {
			line += fmt.Sprintf(", renewed %s ago", roundAge(s.RenewedAgo))
		}
		fmt.Fprintf(tw, "slot %d:\t%s\t(%s)\n", *s.Slot, line, s.Lease)
	}
}

func roundAge(seconds float64) time.Duration {
	d := time.Duration(seconds * float64(time.Second))
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}
