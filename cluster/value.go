package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leasehold/leasehold/internal/leaseconf"
)

// MaxValueBytes bounds the value a holder publishes (V1): it travels in every renewal, and a
// Kubernetes annotation or a store document is no place for a payload.
const MaxValueBytes = 1024

// CurrentValue returns the value the holder of r published for its current term, "" when the
// record is released or its value was written for another term (V2): a writer that does not
// know the field (a client-go LeaderElector taking a Lease over) keeps it, and it must not be
// read as the new holder's.
func (r Record) CurrentValue() string {
	if r.Holder == "" || r.ValueTerm != r.Term {
		return ""
	}
	return r.Value
}

// carryValue returns rec as a write that holds it carries it: this instance's value for the
// record's term (V1). Every acquisition, renewal and takeover goes through it, so a value
// always names the term it was written for.
func (e *Elector) carryValue(rec Record) Record {
	rec.Value, rec.ValueTerm = e.value, rec.Term
	if e.value == "" {
		rec.ValueTerm = 0
	}
	return rec
}

// clearValue empties the value of a record being released (V1): nobody leads, nobody is
// reached through it.
func clearValue(rec *Record) { rec.Value, rec.ValueTerm = "", 0 }

// LeaderInfo is what Leader reads of a lease (V3).
type LeaderInfo struct {
	ID    string // the holder's instance ID, "" when nobody holds the lease
	Term  uint64 // the record's term, 0 when there is no record
	Value string // what the holder publishes for this term, "" when nothing (V2)

	// expired is set when the record, read once, shows a holder whose declared duration has
	// passed since its last renewal by the reader's clock.
	expired bool
}

// Held reports whether a leader holds the lease as a single read can tell (V4): false when
// there is no record, when it is released, and when the holder's last renewal is older than
// the duration it declared, by the reader's clock. A reader that reads once has no other
// measure of time than the timestamps; an election judges expiry on its own clock (E6), so
// Held may still be true for a leader that has just died.
func (i LeaderInfo) Held() bool { return i.ID != "" && !i.expired }

// Leader reads the lease name in lock once and returns who holds it and what it publishes
// (V3). A missing record is no error: it returns a LeaderInfo whose Held is false.
func Leader(ctx context.Context, lock Lock, name string) (LeaderInfo, error) {
	if lock == nil {
		return LeaderInfo{}, errors.New("cluster: Leader: the Lock is nil")
	}
	name = leaseconf.LeaseName(name)
	rec, err := recovering(lock).Get(ctx, name)
	if errors.Is(err, ErrNotFound) {
		return LeaderInfo{}, nil
	}
	if err != nil {
		return LeaderInfo{}, fmt.Errorf("cluster: lease %q: leader: %w", name, err)
	}
	return leaderInfo(rec, time.Now()), nil
}

// leaderInfo describes rec as read at now.
func leaderInfo(rec Record, now time.Time) LeaderInfo {
	info := LeaderInfo{ID: rec.Holder, Term: rec.Term, Value: rec.CurrentValue()}
	if rec.Holder != "" && rec.Duration > 0 && !rec.RenewedAt.IsZero() {
		info.expired = now.Sub(rec.RenewedAt) > rec.Duration // as leasehold status judges it
	}
	return info
}

// FollowLeader follows the lease cfg.LeaseName through Observe and delivers the LeaderInfo
// of each record Observe delivers (V5): at once, then each time the holder or the term
// changes. The value changes only with them: a holder writes one value for its term. The
// channel closes when ctx ends, as Observe's does.
func FollowLeader(ctx context.Context, cfg ObserveConfig) (<-chan LeaderInfo, error) {
	recs, err := Observe(ctx, cfg)
	if err != nil {
		return nil, err
	}
	out := make(chan LeaderInfo)
	go func() {
		defer close(out)
		for rec := range recs {
			select {
			case out <- leaderInfo(rec, time.Now()):
			case <-ctx.Done():
				// Observe closes recs once ctx has ended: drain it so its goroutine returns.
				for range recs {
				}
				return
			}
		}
	}()
	return out, nil
}

// The published value (V1): carried by the holder's writes, cleared by a release, and two
// fields of the store document, which a document written before them lacks.
func init() {
	registerHolderFields(holderField{(*Elector).carryValue, clearValue})
	registerStoreFields(
		stringField("value", func(r *Record) *string { return &r.Value }),
		counterField("valueTerm", func(r *Record) *uint64 { return &r.ValueTerm }),
	)
}
