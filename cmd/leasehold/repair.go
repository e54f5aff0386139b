package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/fencing"
	"github.com/leasehold/leasehold/internal/storerecord"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
	"github.com/leasehold/leasehold/store/file"
)

const repairUsage = `Usage: leasehold repair [flags]

Replaces a lease record that the elections cannot read (corrupt, or written by another
program) by a released record whose term is above the last one, so that the next leader's term
is above every term given before. Deleting the record instead would restart the terms at 1:
a resource that refuses stale terms would then refuse every new leader.

- A corrupt record: repair watches it for the lease duration (the larger of --lease-duration
  and the record's leaseDuration field, when readable). A leader that led before the record
  became unreadable cannot renew it, so it has stopped leading by then. If the record stays
  as it is, repair replaces it by a released record at the term above its "term" field (when
  that is a number; otherwise at the clock floor, as below), or at --min-term if higher.
  The next leader gets the term above that.
- A record that is not a JSON object at all (garbage bytes, a JSON string or array, a
  truncated file store): repair watches it likewise, then deletes it and creates a released
  record at the clock floor, the whole seconds since 2024-01-01T00:00:00Z (or --min-term if
  higher), above any term it may have held. A truncated file is moved aside, beside itself,
  and a new file written. An instance that creates a record in between wins: repair says so.
- A well-formed record held by an instance: repair watches it likewise. Renewed meanwhile, it
  is a live leader's: repair refuses (exit 1); stop that instance first. Not renewed, it has
  expired and needs no repair (the next attempt of any instance takes it over), unless its term
  is below --min-term: it is then released at --min-term.
- A released record needs no repair, unless its term is below --min-term.
- No record: nothing to repair, unless --min-term is given: repair then creates a released
  record at that term.

The write is conditional on the record as read (its revision): a record that changed in the
meantime is never overwritten (exit 1: look at it, and run repair again). Exit status 0 when
the record was repaired or needs no repair, 1 when repair refuses or fails, 2 on bad input.

Flags:
  --lease NAME            the lease's name (default leader)
  --store URL             the store holding the lease (default: $LEASEHOLD_STORE, else the
                          file store of run and status)
  --store-file PATH       read the store's URL from PATH, as run and status do
  --config FILE           a Webda-style JSON configuration: the lease is in its Registry, and
                          its cluster service (Webda/StoreClusterService) gives the lease's
                          name and duration
  --lease-duration D      the instances' lease duration L: repair watches a record at least
                          that long before it replaces it (default 15s, or the
                          configuration's)
  --min-term N            the repaired record's term is at least N: give the highest term a
                          fenced resource has accepted; the next leader gets a term above it
  --force                 replace a corrupt record at once, without watching it: only when no
                          instance of the lease has run since it became corrupt. A record held
                          by an instance is always watched.
  --timeout D             give up a store operation after D (default 10s)
` + durationNote

func repairCommand(args []string, stdout, _ io.Writer) (int, error) {
	fs := flag.NewFlagSet("repair", flag.ContinueOnError)
	var f commonFlags
	fs.StringVar(&f.store, "store", "", "")
	fs.StringVar(&f.storeFile, "store-file", "", "")
	fs.StringVar(&f.lease, "lease", cluster.DefaultLeaseName, "")
	fs.StringVar(&f.config, "config", "", "")
	fs.DurationVar(&f.leaseDuration, "lease-duration", cluster.DefaultLeaseDuration, "")
	minTerm := fs.Uint64("min-term", 0, "")
	force := fs.Bool("force", false, "")
	timeout := fs.Duration("timeout", 10*time.Second, "")
	if done, err := parseCommand(fs, args, repairUsage, stdout); done || err != nil {
		return exitOK, err
	}
	f.visit(fs)
	if f.lease == "" {
		return 0, badInput(repairUsage, "--lease must not be empty")
	}
	if f.leaseDuration <= 0 {
		return 0, badInput(repairUsage, "--lease-duration %v must be positive", f.leaseDuration)
	}
	if err := checkLeaseFloor(f.leaseDuration, "--lease-duration"); err != nil {
		return 0, badInput(repairUsage, "%v", err)
	}
	if *timeout <= 0 {
		return 0, badInput(repairUsage, "--timeout %v must be positive", *timeout)
	}
	if *minTerm == math.MaxUint64 {
		return 0, badInput(repairUsage, "--min-term %d leaves no term for the next leader", *minTerm)
	}
	if err := f.validateStore(repairUsage); err != nil {
		return 0, err
	}
	r := &repairer{minTerm: *minTerm, force: *force, timeout: *timeout, out: stdout}
	if f.config == "" && *minTerm == 0 && absentStore(&f) {
		// Nothing to repair, and opening the store would create its lock file.
		r.lease, r.where = f.lease, store.RedactString(f.store)
		r.say("lease:", "%s", r.lease)
		r.say("store:", "%s", r.where)
		r.nothingMissing()
		return exitOK, nil
	}
	ctx := context.Background()
	closeStore, err := r.open(ctx, &f)
	if err != nil {
		return 0, err
	}
	defer closeStore(context.Background())
	return r.run(ctx)
}

// open sets the store, lease and duration of the flags, and returns how to close the store.
func (r *repairer) open(ctx context.Context, f *commonFlags) (func(context.Context) error, error) {
	octx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if f.config == "" {
		if err := f.makeStateDir(); err != nil {
			return nil, err
		}
		st, err := openStore(octx, f.store)
		if errors.Is(err, file.ErrCorrupt) {
			// The whole file is unreadable: run replaces it (repairFile).
			u, perr := url.Parse(f.store)
			if perr != nil {
				return nil, err
			}
			r.corruptFile, r.fileErr = u.Path, err
			r.lease, r.where, r.l = f.lease, store.RedactString(f.store), f.leaseDuration
			return func(context.Context) error { return nil }, nil
		}
		if err != nil {
			return nil, err
		}
		r.st, r.lease, r.where, r.l = st, f.lease, store.RedactString(f.store), f.leaseDuration
		return func(context.Context) error { return store.Close(st) }, nil
	}
	ac, err := loadAppConfig(f, repairUsage)
	if err != nil {
		return nil, err
	}
	if _, ok := ac.svc.(*leasehold.StoreClusterService); !ok {
		return nil, badInput(repairUsage, "--config %s: cluster service %q is a %s: repair mends a lease record kept in a Registry (Webda/StoreClusterService); a Kubernetes Lease is edited with kubectl",
			f.config, ac.name, ac.typ)
	}
	if len(ac.registry.Services) == 0 {
		return nil, badInput(repairUsage, "--config %s has no Registry: its lease lives in each process's memory, there is no record to repair", f.config)
	}
	reg, err := ac.startRegistry(octx)
	if err != nil {
		return nil, err
	}
	r.st, r.lease, r.where = reg.Registry(), ac.lease(), f.config
	if r.l, _, err = ac.es.Timing(); err != nil {
		_ = reg.Stop(octx)
		return nil, badInput(repairUsage, "--config %s: cluster service %q: %v", f.config, ac.name, err)
	}
	return reg.Stop, nil
}

// repairer mends the record of one lease in a store.
type repairer struct {
	st      store.Store
	lease   string
	where   string        // the store (redacted) or the configuration, for messages
	l       time.Duration // the instances' lease duration: the shortest watch
	minTerm uint64
	force   bool
	timeout time.Duration // of each store operation
	out     io.Writer

	// corruptFile is the path of a file store whose whole file is unreadable (file.ErrCorrupt,
	// fileErr): st is nil, and run replaces the file.
	corruptFile string
	fileErr     error
}

// errChanged is the answer to a conditional write that lost: the record changed since it was
// read.
var errChanged = errors.New("the record changed since repair read it: it was not overwritten; look at it (leasehold status), and run repair again if it still needs it")

func (r *repairer) say(label, format string, args ...any) {
	fmt.Fprintf(r.out, "%-11s%s\n", label, fmt.Sprintf(format, args...))
}

// storeDocs is the store Lock's document codec: repair reads and writes lease records as the
// elections do.
var storeDocs = cluster.NewStoreLock(nil).(storerecord.Codec[cluster.Record])

func (r *repairer) key() string { return storeDocs.Key(r.lease) }

func (r *repairer) get(ctx context.Context) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	return r.st.Get(ctx, r.key())
}

// run reads the record, judges it, and mends it if it needs it.
func (r *repairer) run(ctx context.Context) (int, error) {
	r.say("lease:", "%s", r.lease)
	r.say("store:", "%s", r.where)
	if r.corruptFile != "" {
		return r.repairFile(ctx)
	}
	doc, err := r.get(ctx)
	seen := time.Now()
	switch {
	case errors.Is(err, store.ErrNotFound):
		return r.missing(ctx)
	case errors.Is(err, driver.ErrNotObject):
		return r.unreadable(ctx, seen, err)
	case err != nil:
		return 0, fmt.Errorf("lease %q in %s: %w", r.lease, r.where, err)
	}
	rec, bad := storeDocs.Decode(r.key(), doc)
	if bad != nil {
		return r.corrupt(ctx, doc, seen, bad)
	}
	return r.wellFormed(ctx, doc, seen, rec)
}

func (r *repairer) nothingMissing() {
	r.say("record:", "missing")
	r.say("result:", "nothing to repair: the first leader creates the record at term 1 (--min-term N makes the terms start above N)")
}

func (r *repairer) missing(ctx context.Context) (int, error) {
	if r.minTerm == 0 {
		r.nothingMissing()
		return exitOK, nil
	}
	r.say("record:", "missing")
	rec := released(r.minTerm)
	wctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	err := r.st.Create(wctx, r.key(), storeDocs.Encode(rec))
	switch {
	case errors.Is(err, store.ErrExists):
		return 0, fmt.Errorf("lease %q: %w", r.lease, errChanged)
	case err != nil:
		return 0, fmt.Errorf("lease %q: create the record: %w", r.lease, err)
	}
	r.say("old term:", "none")
	r.say("new term:", "%d (a released record; the next leader gets term %d)", rec.Term, rec.Term+1)
	r.say("result:", "created a released record at term %d", rec.Term)
	return exitOK, nil
}

func (r *repairer) wellFormed(ctx context.Context, doc map[string]any, seen time.Time, rec cluster.Record) (int, error) {
	if rec.Holder == "" {
		r.say("record:", "released, term %d", rec.Term)
		if rec.Term >= r.minTerm {
			r.say("result:", "nothing to repair: the next attempt of any instance takes the lease over at term %d", rec.Term+1)
			return exitOK, nil
		}
		return r.replace(ctx, doc, &store.Condition{Field: "revision", Value: rec.Revision}, rec.Term, strconv.FormatUint(rec.Term, 10))
	}
	r.say("record:", "held by %q, term %d, renewed %s by its clock, for %v", rec.Holder, rec.Term, formatWall(rec.RenewedAt), rec.Duration)
	d := max(r.l, rec.Duration)
	r.say("watching:", "for %v: a live leader renews it meanwhile", d)
	now, changed, err := r.watch(ctx, doc, seen, d)
	if err != nil {
		return 0, err
	}
	if changed {
		return 0, r.refuse(rec, now)
	}
	r.say("watched:", "unchanged for %v: its holder stopped renewing it, it has expired", d)
	if rec.Term >= r.minTerm {
		r.say("result:", "nothing to repair: the next attempt of any instance takes the lease over at term %d", rec.Term+1)
		return exitOK, nil
	}
	return r.replace(ctx, doc, &store.Condition{Field: "revision", Value: rec.Revision}, rec.Term, "its term")
}

// refuse explains why a record that changed while repair watched it is left alone.
func (r *repairer) refuse(was cluster.Record, now map[string]any) error {
	if now == nil {
		return fmt.Errorf("lease %q: the record held by %q was deleted while repair watched it: something else mends it; run repair again once nothing does", r.lease, was.Holder)
	}
	rec, err := storeDocs.Decode(r.key(), now)
	switch {
	case err != nil:
		return fmt.Errorf("lease %q: the record held by %q changed while repair watched it, and is unreadable now (%v): run repair again", r.lease, was.Holder, err)
	case rec.Holder == "":
		return fmt.Errorf("lease %q: %q released the lease (term %d) while repair watched it: it needs no repair", r.lease, was.Holder, rec.Term)
	}
	how := "renewed it"
	if rec.Holder != was.Holder {
		how = fmt.Sprintf("took it over from %q", was.Holder)
	}
	return fmt.Errorf("lease %q is held by %q, a live leader: it %s (term %d) while repair watched it. It expires %v after its last renewal, at %s by its clock, only if it stops renewing; a held lease needs no repair: stop that instance first",
		r.lease, rec.Holder, how, rec.Term, rec.Duration, formatWall(rec.RenewedAt.Add(rec.Duration)))
}

func (r *repairer) corrupt(ctx context.Context, doc map[string]any, seen time.Time, bad error) (int, error) {
	r.say("record:", "corrupt: %v", bad)
	cond := conditionOn(doc)
	if cond == nil {
		return 0, fmt.Errorf("lease %q: the document under %q has no field at all, so no write can be conditional on it as read: remove it yourself (once no instance runs), then run repair --min-term N", r.lease, r.key())
	}
	last, termNote := lastTerm(doc)
	if !termKnown(doc) {
		// The term it held cannot be read: the clock floor is above it (C4).
		floor := fencing.Floor(time.Now())
		last = floor - 1
		termNote += fmt.Sprintf("; the new term is at least the clock floor %d (seconds since 2024-01-01T00:00:00Z)", floor)
	}
	if !r.force {
		d := r.l
		if declared, ok := doc["leaseDuration"].(float64); ok && declared > 0 && declared < float64(math.MaxInt64/int64(time.Millisecond)) {
			d = max(d, time.Duration(declared)*time.Millisecond)
		}
		r.say("watching:", "for %v: a leader from before the corruption cannot renew the record, so it stops leading within that time", d)
		now, changed, err := r.watch(ctx, doc, seen, d)
		if err != nil {
			return 0, err
		}
		if changed {
			state := "deleted"
			if now != nil {
				state = "rewritten"
			}
			return 0, fmt.Errorf("lease %q: the record was %s while repair watched it: something writes it; repair leaves it to that writer (look at it with leasehold status, and run repair again once nothing writes it)", r.lease, state)
		}
		r.say("watched:", "unchanged for %v", d)
	}
	return r.replace(ctx, doc, cond, last, termNote)
}

// replace writes a released record over doc, conditional on cond (the document as read), at
// the term above last and at least --min-term.
func (r *repairer) replace(ctx context.Context, doc map[string]any, cond *store.Condition, last uint64, lastNote string) (int, error) {
	if last == math.MaxUint64 {
		return 0, fmt.Errorf("lease %q: its term %d is the last one: no term is above it", r.lease, last)
	}
	term := max(last+1, r.minTerm)
	rec := released(term)
	wctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	err := r.st.Patch(wctx, r.key(), storeDocs.Encode(rec), cond)
	switch {
	case errors.Is(err, store.ErrConditionFailed), errors.Is(err, store.ErrNotFound):
		return 0, fmt.Errorf("lease %q: %w", r.lease, errChanged)
	case err != nil:
		return 0, fmt.Errorf("lease %q: write the record: %w", r.lease, err)
	}
	r.say("old term:", "%s", lastNote)
	r.say("new term:", "%d (a released record; the next leader gets term %d)", term, term+1)
	r.say("result:", "repaired: the record is a released one, written on condition that its %q was still %s", cond.Field, jsonText(cond.Value))
	if extra := extraFields(doc); len(extra) > 0 {
		r.say("kept:", "the fields %s, which are not the record's: a store write patches fields, it cannot remove them; elections ignore them", strings.Join(extra, ", "))
	}
	return exitOK, nil
}

// watch reads the record until it has stayed as first for d since seen (when first was read),
// on this host's monotonic clock, or until it changes. It returns the record last read (nil
// once deleted) and whether it changed. A leader renews its record every R: a record unchanged
// for the lease duration has no live leader (E6).
func (r *repairer) watch(ctx context.Context, first map[string]any, seen time.Time, d time.Duration) (map[string]any, bool, error) {
	deadline := seen.Add(d)
	poll := min(max(d/20, 20*time.Millisecond), 500*time.Millisecond)
	for {
		if wait := min(poll, time.Until(deadline)); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, false, ctx.Err()
			case <-t.C:
			}
		}
		doc, err := r.get(ctx)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil, true, nil
		case err != nil:
			return nil, false, fmt.Errorf("lease %q: read the record while watching it: %w", r.lease, err)
		case !driver.JSONEqual(doc, first):
			return doc, true, nil
		case !time.Now().Before(deadline):
			return doc, false, nil
		}
	}
}

// released is the record repair writes: nobody holds it, and the next attempt of any instance
// takes it over at term+1.
func released(term uint64) cluster.Record {
	return cluster.Record{Term: term, RenewedAt: time.Now().Round(0).UTC(), Revision: storeDocs.NewRevision()}
}

// conditionOn is the condition of a write over a corrupt document: its revision as read, which
// every writer of lease records changes; without one, another field as read (a scalar one
// if it has any), or nil when it has no field at all.
func conditionOn(doc map[string]any) *store.Condition {
	if v, ok := doc["revision"]; ok {
		return &store.Condition{Field: "revision", Value: v}
	}
	keys := slices.Sorted(maps.Keys(doc))
	for _, k := range keys {
		switch doc[k].(type) {
		case map[string]any, []any:
			continue
		}
		return &store.Condition{Field: k, Value: doc[k]}
	}
	if len(keys) == 0 {
		return nil
	}
	return &store.Condition{Field: keys[0], Value: doc[keys[0]]}
}

// lastTerm reads the term of a corrupt document when its "term" field is a number, or a
// string holding one; a fraction counts as the integer below it, since the new term is above
// it anyway. Otherwise the last term is unknown: 0.
func lastTerm(doc map[string]any) (uint64, string) {
	v, present := doc["term"]
	f, ok := v.(float64)
	if s, isString := v.(string); isString {
		var err error
		f, err = strconv.ParseFloat(strings.TrimSpace(s), 64)
		ok = err == nil
	}
	if ok && f >= 0 && f < 1<<63 {
		return uint64(f), fmt.Sprintf("%d (from its \"term\" field, %s)", uint64(f), jsonText(v))
	}
	if !present {
		return 0, "unknown (no \"term\" field): give --min-term if fenced resources have seen terms"
	}
	return 0, fmt.Sprintf("unknown (its \"term\" field is %s): give --min-term if fenced resources have seen terms", jsonText(v))
}

// termKnown reports whether lastTerm read a term in doc.
func termKnown(doc map[string]any) bool {
	_, note := lastTerm(doc)
	return !strings.HasPrefix(note, "unknown")
}

// extraFields are the fields of doc that are not a lease record's.
func extraFields(doc map[string]any) []string {
	record := storeDocs.Encode(cluster.Record{})
	var out []string
	for _, k := range slices.Sorted(maps.Keys(doc)) {
		if _, ok := record[k]; !ok {
			out = append(out, strconv.Quote(k))
		}
	}
	return out
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func formatWall(t time.Time) string {
	if t.IsZero() {
		return "(unknown)"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// rawDeleters remove, unconditionally, a value that is not a document, for the stores whose
// Delete refuses it (backend_*.go); each answers false for a store that is not its own.
var rawDeleters []func(ctx context.Context, st store.Store, key string) (bool, error)

// unreadable repairs a record whose bytes are not a JSON object at all (garbage, a string, an
// array): after watching it for L unless --force, it deletes it and creates a released record
// at the clock floor (or --min-term if higher). The elections stop on such a record (E8): no
// instance leads on it, and none writes it meanwhile.
func (r *repairer) unreadable(ctx context.Context, seen time.Time, bad error) (int, error) {
	r.say("record:", "unreadable: %v", bad)
	if !r.force {
		d := r.l
		r.say("watching:", "for %v: a leader from before the damage cannot renew the record, so it stops leading within that time", d)
		deadline := seen.Add(d)
		poll := min(max(d/20, 20*time.Millisecond), 500*time.Millisecond)
		for time.Now().Before(deadline) {
			t := time.NewTimer(min(poll, time.Until(deadline)))
			select {
			case <-ctx.Done():
				t.Stop()
				return 0, ctx.Err()
			case <-t.C:
			}
			_, err := r.get(ctx)
			switch {
			case err == nil, errors.Is(err, store.ErrNotFound):
				return 0, fmt.Errorf("lease %q: the unreadable record was rewritten or deleted while repair watched it: something writes it; repair leaves it to that writer (look at it with leasehold status, and run repair again once nothing writes it)", r.lease)
			case !errors.Is(err, driver.ErrNotObject):
				return 0, fmt.Errorf("lease %q: read the record while watching it: %w", r.lease, err)
			}
		}
		r.say("watched:", "unreadable for %v", d)
	}
	term, note := r.floorTerm(0)
	dctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	err := r.st.Delete(dctx, r.key(), nil)
	if errors.Is(err, driver.ErrNotObject) { // a store that deletes only documents
		for _, del := range rawDeleters {
			if ok, derr := del(dctx, r.st, r.key()); ok {
				err = derr
				break
			}
		}
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return 0, fmt.Errorf("lease %q: delete the unreadable record: %w", r.lease, err)
	}
	return r.create(ctx, term, note, "replaced the unreadable record (deleted, then created)")
}

// floorTerm is the term of a record repaired without a readable term: the clock floor, above
// read (a term found in what could be read, 0 if none) and at least --min-term.
func (r *repairer) floorTerm(read uint64) (uint64, string) {
	floor := fencing.Floor(time.Now())
	term := max(floor, r.minTerm)
	if read < math.MaxUint64 {
		term = max(term, read+1)
	}
	return term, fmt.Sprintf("unknown (the record cannot be read): the new term is the clock floor %d (seconds since 2024-01-01T00:00:00Z), above any term it may have held", floor)
}

// create writes a released record at term where the record was removed; an instance that
// created one in between wins, and repair reports it.
func (r *repairer) create(ctx context.Context, term uint64, oldNote, what string) (int, error) {
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	err := r.st.Create(cctx, r.key(), storeDocs.Encode(released(term)))
	switch {
	case errors.Is(err, store.ErrExists):
		return 0, fmt.Errorf("lease %q: an instance created a record after repair removed the unreadable one and before it wrote its own: repair left that record as it is; look at it (leasehold status), and if its term is below %d run leasehold repair --min-term %d once no instance runs", r.lease, term, term)
	case err != nil:
		return 0, fmt.Errorf("lease %q: create the record: %w", r.lease, err)
	}
	r.say("old term:", "%s", oldNote)
	r.say("new term:", "%d (a released record; the next leader gets term %d)", term, term+1)
	r.say("result:", "%s", what)
	return exitOK, nil
}

// repairFile replaces a file store's file that cannot be read at all (truncated, not JSON):
// after watching it unchanged for L unless --force (no instance can read or write it
// meanwhile, so a leader from before the damage stops leading), it moves it aside, beside
// itself, and creates the lease's released record in a new file, at the clock floor above any
// term it can find for the lease in the damaged bytes. The other records of the damaged file
// are not carried over: the moved file keeps them.
func (r *repairer) repairFile(ctx context.Context) (int, error) {
	path := r.corruptFile
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	r.say("record:", "unreadable: %v", r.fileErr)
	before, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("lease %q: %w", r.lease, err)
	}
	if !r.force {
		d := r.l
		r.say("watching:", "for %v: a leader from before the damage cannot renew the record, so it stops leading within that time", d)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		case <-t.C:
		}
		if now, err := os.ReadFile(path); err != nil || string(now) != string(before) {
			return 0, fmt.Errorf("lease %q: the file %s changed while repair watched it: something writes it; repair leaves it to that writer (run repair again once nothing does)", r.lease, path)
		}
		r.say("watched:", "unchanged for %v", d)
	}
	read := termInBytes(before, r.key())
	term, note := r.floorTerm(read)
	aside := path + ".corrupt-" + time.Now().UTC().Format("20060102T150405.000000000Z")
	if err := os.Rename(path, aside); err != nil {
		return 0, fmt.Errorf("lease %q: move the damaged file aside: %w", r.lease, err)
	}
	r.say("moved:", "the damaged file to %s (it keeps the other records it held, if any: their leases are not repaired)", aside)
	st, err := file.Open(path)
	if err != nil {
		return 0, fmt.Errorf("lease %q: %w", r.lease, err)
	}
	defer st.Close()
	r.st = st
	return r.create(ctx, term, note, "replaced the damaged file by one holding a released record")
}

// termInBytes finds the highest "term" number following key in damaged bytes (0 if none).
func termInBytes(data []byte, key string) uint64 {
	i := strings.Index(string(data), strconv.Quote(key))
	if i < 0 {
		return 0
	}
	rest := string(data[i:])
	if j := strings.IndexByte(rest, '}'); j >= 0 {
		rest = rest[:j]
	}
	var best uint64
	for _, m := range termField.FindAllStringSubmatch(rest, -1) {
		if n, err := strconv.ParseUint(m[1], 10, 64); err == nil {
			best = max(best, n)
		}
	}
	return best
}

var termField = regexp.MustCompile(`"term"\s*:\s*(\d+)`)
