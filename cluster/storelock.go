package cluster

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/leasehold/leasehold/internal/storerecord"
	"github.com/leasehold/leasehold/store"
)

// storeKeyPrefix prefixes a lease's name to make its key in the store: the lease "leader" is
// the Registry entry "cluster:leader" (S1).
const storeKeyPrefix = "cluster:"

// NewStoreLock returns a Lock that keeps lease records in s, as Webda's StoreClusterService
// does (S1): the record of lease NAME is the document "cluster:NAME", created with the
// store's atomic create-if-absent and updated with a Patch conditioned on its "revision"
// field. The document's fields are holder, term, acquiredAt and renewedAt (RFC 3339 times),
// leaseDuration (milliseconds) and revision, and one for each other field of Record, which its
// feature registers (storeField): those of a resign (R1, R3), resignRequestedAt (an RFC 3339
// time, "" when none is pending) and nextHolder ("" for none), the holder's session (E12),
// value and valueTerm (V1), and priority, unhealthy, priorityTerm, preempt and nextPriority
// (Q1, Q2, U2). Each is written by every write, zero when unset; a document written before
// one existed lacks it, and it reads as zero.
//
// A document the Lock cannot read stops the election of its lease (no instance takes it over,
// E8). Mend it with `leasehold repair`, which replaces it by a released record above its term,
// rather than by deleting it: the next leader's term would rest on the wall clock's floor
// alone (E11).
func NewStoreLock(s store.Store) Lock { return storeLock{s} }

type storeLock struct{ s store.Store }

var _ Lock = storeLock{}

// MinWriteInterval returns the store's bound on the interval between writes to one key (see
// store.MinWriteInterval), which NewElector checks R against.
func (l storeLock) MinWriteInterval() (time.Duration, string) {
	if l.s == nil {
		return 0, ""
	}
	return store.WriteInterval(l.s)
}

func (l storeLock) Get(ctx context.Context, name string) (Record, error) {
	doc, err := l.s.Get(ctx, storeKeyPrefix+name)
	if errors.Is(err, store.ErrNotFound) {
		return Record{}, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	if err != nil {
		return Record{}, err
	}
	return decodeRecord(storeKeyPrefix+name, doc)
}

func (l storeLock) Create(ctx context.Context, name string, r Record) (Record, error) {
	r.Revision = newRevision()
	err := l.s.Create(ctx, storeKeyPrefix+name, encodeRecord(r))
	if errors.Is(err, store.ErrExists) {
		return Record{}, fmt.Errorf("%w: %w", ErrConflict, err)
	}
	if err != nil {
		return Record{}, err
	}
	return r, nil
}

func (l storeLock) Update(ctx context.Context, name string, r Record) (Record, error) {
	if r.Revision == "" {
		return Record{}, fmt.Errorf("cluster: update of lease %q without a revision", name)
	}
	cond := &store.Condition{Field: "revision", Value: r.Revision}
	r.Revision = newRevision()
	err := l.s.Patch(ctx, storeKeyPrefix+name, encodeRecord(r), cond)
	switch {
	case errors.Is(err, store.ErrConditionFailed):
		return Record{}, fmt.Errorf("%w: %w", ErrConflict, err)
	case errors.Is(err, store.ErrNotFound):
		return Record{}, fmt.Errorf("%w: %w", ErrNotFound, err)
	case err != nil:
		return Record{}, err
	}
	return r, nil
}

// The store Lock's documents, for the repository's tools (internal/storerecord): methods of an
// unexported type, so that they are no part of the package's API.
var _ storerecord.Codec[Record] = storeLock{}

// Key returns the key of lease's document in the store.
func (storeLock) Key(lease string) string { return storeKeyPrefix + lease }

// Decode reads the document of a lease record as Get does: a malformed one is an error naming
// the key and the field. A tool that repairs records judges them by the elections' own rule.
func (storeLock) Decode(key string, doc map[string]any) (Record, error) {
	return decodeRecord(key, doc)
}

// Encode returns the document the store Lock writes for r, r.Revision included, for a tool
// that writes a lease record outside an election (a repair, a migration between stores). Give
// it a revision from NewRevision: a record's revision must never repeat (E6).
func (storeLock) Encode(r Record) map[string]any { return encodeRecord(r) }

// NewRevision returns a revision for a record written outside a Lock (Encode): unique, as the
// elections' followers need to tell two writes apart.
func (storeLock) NewRevision() string { return newRevision() }

// newRevision returns a random token: unique without coordination, so a deleted and
// recreated record never repeats a revision a follower may remember (E6).
func newRevision() string { return rand.Text() }

func encodeRecord(r Record) map[string]any {
	doc := map[string]any{
		"holder":        r.Holder,
		"term":          float64(r.Term),
		"acquiredAt":    formatTime(r.AcquiredAt),
		"renewedAt":     formatTime(r.RenewedAt),
		"leaseDuration": float64(r.Duration.Milliseconds()),
		"revision":      r.Revision,
	}
	encodeFields(doc, r)
	return doc
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// decodeRecord reads a lease document; a malformed one is an error naming the key and the
// field, so that it is reported and never silently taken over.
func decodeRecord(key string, doc map[string]any) (Record, error) {
	bad := func(field, want string) (Record, error) {
		return Record{}, fmt.Errorf("cluster: lease record %q: field %q is %v, want %s", key, field, doc[field], want)
	}
	var r Record
	var ok bool
	if r.Holder, ok = doc["holder"].(string); !ok {
		return bad("holder", "a string")
	}
	if r.Revision, ok = doc["revision"].(string); !ok || r.Revision == "" {
		return bad("revision", "a non-empty string")
	}
	term, ok := doc["term"].(float64)
	if !ok || term < 0 || term != math.Trunc(term) {
		return bad("term", "a non-negative integer")
	}
	r.Term = uint64(term)
	for _, f := range []struct {
		name string
		t    *time.Time
	}{{"acquiredAt", &r.AcquiredAt}, {"renewedAt", &r.RenewedAt}} {
		s, _ := doc[f.name].(string)
		if s == "" {
			continue // informative only
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return bad(f.name, "an RFC 3339 time")
		}
		*f.t = t
	}
	if ms, ok := doc["leaseDuration"].(float64); ok {
		r.Duration = time.Duration(ms) * time.Millisecond
	}
	if err := decodeFields(doc, &r); err != nil {
		return Record{}, fmt.Errorf("cluster: lease record %q: %w", key, err)
	}
	return r, nil
}
