package kubelock

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/leasehold/leasehold/store"
)

// KeyPrefix prefixes a lock's name to make the key of its document in the store: the lock
// "controller" is the document "kubelock:controller". It differs from the cluster package's
// "cluster:" because the two records differ: a leasehold instance and a client-go elector
// never share a lease.
const KeyPrefix = "kubelock:"

// maxNameLen bounds a name so that its key fits every backend's key column.
const maxNameLen = 200

// Lock is a resourcelock.Interface whose record is a document in a leasehold store. Give it
// to one LeaderElector (or one controller-runtime Manager): it remembers the revision of the
// document it last read or wrote, which its next Update is conditioned on.
type Lock struct {
	st       store.Store
	name     string
	key      string
	identity string
	onEvent  func(string)

	mu       sync.Mutex
	revision string // of the document last read or written; "" before the first
	term     int    // LeaderTransitions of the last record written naming identity
	holding  bool   // whether term is set
}

var _ resourcelock.Interface = (*Lock)(nil)

// Option configures a Lock.
type Option func(*Lock)

// WithEvents calls f with each event the LeaderElector records ("ID became leader", "ID
// stopped leading"), in the form client-go's Lease lock gives its EventRecorder. f must not
// block: the elector calls it from its loop.
func WithEvents(f func(event string)) Option {
	return func(l *Lock) { l.onEvent = f }
}

// New returns a lock named name, for the candidate identity, whose record is the document
// KeyPrefix+name in st. The identity must be unique among the candidates: client-go tells
// leaders apart by it alone.
func New(st store.Store, name, identity string, opts ...Option) (*Lock, error) {
	if st == nil {
		return nil, errors.New("kubelock: store is nil")
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	if identity == "" {
		return nil, errors.New("kubelock: identity is empty: client-go tells leaders apart by it")
	}
	if !utf8.ValidString(identity) {
		return nil, fmt.Errorf("kubelock: identity %q is not valid UTF-8", identity)
	}
	l := &Lock{st: st, name: name, key: KeyPrefix + name, identity: identity}
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("kubelock: option %d is nil", i)
		}
		o(l)
	}
	return l, nil
}

func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("kubelock: name is empty")
	case len(name) > maxNameLen:
		return fmt.Errorf("kubelock: name %.20q... is %d bytes long, more than %d", name, len(name), maxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("kubelock: name %q is not valid UTF-8", name)
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return fmt.Errorf("kubelock: name %q holds a space or a control character", name)
	}
	return nil
}

// Identity returns the candidate's identity.
func (l *Lock) Identity() string { return l.identity }

// Describe names the lock and its store key in the elector's logs.
func (l *Lock) Describe() string { return "leasehold store " + l.key }

// Key returns the key of the lock's document in the store.
func (l *Lock) Key() string { return l.key }

// RecordEvent passes the elector's event to the function given WithEvents, if any.
func (l *Lock) RecordEvent(event string) {
	if l.onEvent != nil {
		l.onEvent(l.identity + " " + event)
	}
}

// Term returns the LeaderTransitions of the record this lock last wrote naming its identity as
// the holder, and whether the last record it wrote or read names it. Read in OnStartedLeading,
// it is the term of the leadership just acquired: a fencing token that grows with each change
// of holder (see the package documentation for its limits).
func (l *Lock) Term() (term int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.term, l.holding
}

// Get reads the record. A missing document is an error for which apierrors.IsNotFound holds,
// so that the elector creates it; the raw bytes include the document's revision, so that the
// elector sees every write as a change, even one that would repeat the record.
func (l *Lock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	doc, err := l.st.Get(ctx, l.key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, &statusError{metav1.StatusReasonNotFound, 404, fmt.Errorf("kubelock: lock %q: %w", l.name, err)}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("kubelock: lock %q: %w", l.name, err)
	}
	rec, rev, err := decode(l.key, doc)
	if err != nil {
		return nil, nil, err
	}
	raw, err := json.Marshal(struct {
		*resourcelock.LeaderElectionRecord
		Revision string `json:"revision"`
	}{&rec, rev})
	if err != nil {
		return nil, nil, fmt.Errorf("kubelock: lock %q: %w", l.name, err)
	}
	l.mu.Lock()
	l.revision = rev
	if rec.HolderIdentity != l.identity {
		l.holding = false
	}
	l.mu.Unlock()
	return &rec, raw, nil
}

// Create stores the record if no document exists; otherwise it fails with an error for which
// apierrors.IsAlreadyExists holds.
func (l *Lock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	if err := checkRecord(l.name, ler); err != nil {
		return err
	}
	rev := rand.Text()
	err := l.st.Create(ctx, l.key, encode(ler, rev))
	if errors.Is(err, store.ErrExists) {
		return &statusError{metav1.StatusReasonAlreadyExists, 409, fmt.Errorf("kubelock: lock %q: %w", l.name, err)}
	}
	if err != nil {
		return fmt.Errorf("kubelock: lock %q: %w", l.name, err)
	}
	l.wrote(ler, rev)
	return nil
}

// Update replaces the record if the document is still the one this lock last read or wrote;
// otherwise it fails with an error for which apierrors.IsConflict holds (someone wrote in
// between) or apierrors.IsNotFound holds (the document was deleted).
func (l *Lock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	if err := checkRecord(l.name, ler); err != nil {
		return err
	}
	l.mu.Lock()
	prev := l.revision
	l.mu.Unlock()
	if prev == "" {
		return fmt.Errorf("kubelock: lock %q: update before any Get or Create", l.name)
	}
	rev := rand.Text()
	err := l.st.Patch(ctx, l.key, encode(ler, rev), &store.Condition{Field: "revision", Value: prev})
	switch {
	case errors.Is(err, store.ErrConditionFailed):
		return &statusError{metav1.StatusReasonConflict, 409, fmt.Errorf("kubelock: lock %q changed since it was read: %w", l.name, err)}
	case errors.Is(err, store.ErrNotFound):
		return &statusError{metav1.StatusReasonNotFound, 404, fmt.Errorf("kubelock: lock %q: %w", l.name, err)}
	case err != nil:
		// The write may have happened: the next Update then fails on the revision, and the
		// elector reads the document again.
		return fmt.Errorf("kubelock: lock %q: %w", l.name, err)
	}
	l.wrote(ler, rev)
	return nil
}

func (l *Lock) wrote(ler resourcelock.LeaderElectionRecord, rev string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.revision = rev
	l.holding = ler.HolderIdentity == l.identity
	if l.holding {
		l.term = ler.LeaderTransitions
	}
}

// checkRecord refuses a record that would let the others take over at once: client-go stores
// the lease duration in whole seconds, so a LeaseDuration under a second is written as 0, and
// every other candidate would find the lease expired as soon as it read it.
func checkRecord(name string, ler resourcelock.LeaderElectionRecord) error {
	if ler.HolderIdentity != "" && ler.LeaseDurationSeconds < 1 {
		return fmt.Errorf("kubelock: lock %q: record of holder %q has leaseDurationSeconds %d: the elector's LeaseDuration must be at least 1s (client-go keeps whole seconds)",
			name, ler.HolderIdentity, ler.LeaseDurationSeconds)
	}
	if ler.LeaderTransitions < 0 {
		return fmt.Errorf("kubelock: lock %q: leaderTransitions %d is negative", name, ler.LeaderTransitions)
	}
	return nil
}

func encode(ler resourcelock.LeaderElectionRecord, rev string) map[string]any {
	return map[string]any{
		"holderIdentity":       ler.HolderIdentity,
		"leaseDurationSeconds": float64(ler.LeaseDurationSeconds),
		"acquireTime":          formatTime(ler.AcquireTime.Time),
		"renewTime":            formatTime(ler.RenewTime.Time),
		"leaderTransitions":    float64(ler.LeaderTransitions),
		// Always written, empty when unset: a Patch leaves the fields it does not name.
		"strategy":        string(ler.Strategy),
		"preferredHolder": ler.PreferredHolder,
		"revision":        rev,
	}
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// decode reads a lock document. A malformed one is an error naming the key and the field: the
// elector then neither renews nor takes over, and logs the error, until the document is mended
// or deleted.
func decode(key string, doc map[string]any) (resourcelock.LeaderElectionRecord, string, error) {
	var r resourcelock.LeaderElectionRecord
	bad := func(field, want string) (resourcelock.LeaderElectionRecord, string, error) {
		return r, "", fmt.Errorf("kubelock: document %q: field %q is %v, want %s", key, field, doc[field], want)
	}
	rev, ok := doc["revision"].(string)
	if !ok || rev == "" {
		return bad("revision", "a non-empty string")
	}
	if r.HolderIdentity, ok = doc["holderIdentity"].(string); !ok {
		return bad("holderIdentity", "a string")
	}
	for _, f := range []struct {
		name string
		v    *int
	}{{"leaseDurationSeconds", &r.LeaseDurationSeconds}, {"leaderTransitions", &r.LeaderTransitions}} {
		n, ok := doc[f.name].(float64)
		if !ok || n < 0 || n != math.Trunc(n) || n > math.MaxInt32 {
			return bad(f.name, "a non-negative integer")
		}
		*f.v = int(n)
	}
	for _, f := range []struct {
		name string
		t    *metav1.Time
	}{{"acquireTime", &r.AcquireTime}, {"renewTime", &r.RenewTime}} {
		s, ok := doc[f.name].(string)
		if !ok {
			return bad(f.name, "an RFC 3339 time or an empty string")
		}
		if s == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return bad(f.name, "an RFC 3339 time or an empty string")
		}
		f.t.Time = t
	}
	for _, f := range []struct {
		name string
		s    *string
	}{{"strategy", (*string)(&r.Strategy)}, {"preferredHolder", &r.PreferredHolder}} {
		v, ok := doc[f.name]
		if !ok || v == nil {
			continue
		}
		if *f.s, ok = v.(string); !ok {
			return bad(f.name, "a string")
		}
	}
	return r, rev, nil
}

// statusError is an error that client-go's and apimachinery's errors.IsNotFound, IsConflict
// and IsAlreadyExists recognize, as they would the API server's, while the store's error stays
// in its chain.
type statusError struct {
	reason metav1.StatusReason
	code   int32
	err    error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

// Status makes e an apierrors.APIStatus.
func (e *statusError) Status() metav1.Status {
	return metav1.Status{Status: metav1.StatusFailure, Reason: e.reason, Code: e.code, Message: e.err.Error()}
}
