package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/leasehold/leasehold/cluster"
)

// NewLeaseLock returns a cluster.Lock that keeps each lease record in the
// coordination.k8s.io/v1 Lease of the same name in namespace (K1):
//
//	holderIdentity        Record.Holder ("" when released)
//	leaseTransitions      the changes of holder, counted as client-go counts them (see setSpec)
//	annotations           Record.Term (AnnotationTerm, with AnnotationTermTransitions; see termOf)
//	acquireTime           Record.AcquiredAt
//	renewTime             Record.RenewedAt
//	leaseDurationSeconds  Record.Duration, rounded up to whole seconds, at least 1
//	resourceVersion       Record.Revision, the compare-and-swap token
//	annotations           the other fields, each feature's in annotations of its own:
//	                      Record.ResignRequested and Record.NextHolder (R1-R4; see AnnotationNextHolder),
//	                      Record.Preempt and Record.NextPriority (Q2, Q4; see AnnotationNextPriority),
//	                      Record.Session (E12; see AnnotationSession),
//	                      Record.Value (V1; see AnnotationValue),
//	                      Record.Priority and Record.Unhealthy (Q1, U2; see AnnotationPriority)
//
// A 409 Conflict on update and AlreadyExists on create are lost races (cluster.ErrConflict).
// An election only gets, creates and updates Leases. The Lock is also a cluster.Roster, for
// partitioned elections (partition.New, D5): one Lease per member
// (MemberLeaseName), labelled with its roster (LabelRoster), whose holderIdentity is the
// member and whose annotations carry its session, beat and duration; a member's beat updates
// only its own Lease, so members never conflict. That roster also needs list (Members reads
// the roster with one List by label selector) and delete (Leave deletes the member's Lease)
// on leases. timeout, when positive, bounds each request.
func NewLeaseLock(leases coordinationclient.LeasesGetter, namespace string, timeout time.Duration) cluster.Lock {
	return &leaseLock{client: leases.Leases(namespace), namespace: namespace, timeout: timeout, last: map[string]*coordinationv1.Lease{}}
}

type leaseLock struct {
	client    coordinationclient.LeaseInterface
	namespace string
	timeout   time.Duration

	mu sync.Mutex
	// last is the newest Lease read, written or watched, by name (remember): an update starts
	// from it when its resourceVersion is the one being replaced, so labels, annotations and
	// owner references that others put on the Lease are kept (K1).
	last map[string]*coordinationv1.Lease
}

var _ cluster.Lock = (*leaseLock)(nil)

func (l *leaseLock) Get(ctx context.Context, name string) (cluster.Record, error) {
	ctx, cancel := l.bound(ctx)
	defer cancel()
	lease, err := l.client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return cluster.Record{}, l.wrap("get", name, err)
	}
	l.remember(lease)
	return l.record(lease)
}

func (l *leaseLock) Create(ctx context.Context, name string, r cluster.Record) (cluster.Record, error) {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: l.namespace}}
	// client-go's LeaseLock creates a Lease with leaseTransitions 0: its first holder is no
	// change of holder.
	return l.write(ctx, "create", name, lease, r, 0, func(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
		return l.client.Create(ctx, lease, metav1.CreateOptions{})
	})
}

func (l *leaseLock) Update(ctx context.Context, name string, r cluster.Record) (cluster.Record, error) {
	if r.Revision == "" {
		return cluster.Record{}, l.fail("update", name, errors.New("no resourceVersion to compare"))
	}
	var lease *coordinationv1.Lease
	l.mu.Lock()
	if prev := l.last[name]; prev != nil && prev.ResourceVersion == r.Revision {
		lease = prev.DeepCopy()
	}
	l.mu.Unlock()
	if lease == nil {
		var err error
		if lease, err = l.current(ctx, name, r.Revision); err != nil {
			return cluster.Record{}, err
		}
	}
	// The API server refuses the update with 409 Conflict unless this is still the Lease's
	// resourceVersion: that is the compare-and-swap.
	lease.ResourceVersion = r.Revision
	return l.write(ctx, "update", name, lease, r, transitionsAfter(lease.Spec, r.Holder), func(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
		return l.client.Update(ctx, lease, metav1.UpdateOptions{})
	})
}

// write puts r into lease (its spec, with leaseTransitions transitions, and annotations),
// sends it with send (a create or an update, op) within the Lock's timeout, and returns the
// record of the Lease the API server answers, remembered for the next update.
func (l *leaseLock) write(ctx context.Context, op, name string, lease *coordinationv1.Lease, r cluster.Record, transitions int32,
	send func(context.Context, *coordinationv1.Lease) (*coordinationv1.Lease, error)) (cluster.Record, error) {
	if err := encodeLease(lease, r, transitions); err != nil {
		return cluster.Record{}, l.fail(op, name, err)
	}
	ctx, cancel := l.bound(ctx)
	defer cancel()
	written, err := send(ctx, lease)
	if err != nil {
		return cluster.Record{}, l.wrap(op, name, err)
	}
	l.remember(written)
	return l.record(written)
}

func (l *leaseLock) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if l.timeout > 0 {
		return context.WithTimeout(ctx, l.timeout)
	}
	return ctx, func() {}
}

// current reads the Lease name for an update on revision rev when no Lease of that
// resourceVersion is remembered (the record was read by another Lock, or a newer Lease was
// remembered since): an update never replaces the Lease by a bare one, which would drop what
// other tools wrote on it (K1). It returns a copy of the Lease when rev is still its
// resourceVersion; otherwise the update would be refused with 409 Conflict, and it returns
// that answer, a lost race (cluster.ErrConflict), without sending it. The read is consistent
// (a get without a resourceVersion is served as of the latest write), so a Lease of another
// resourceVersion was written after rev.
func (l *leaseLock) current(ctx context.Context, name, rev string) (*coordinationv1.Lease, error) {
	ctx, cancel := l.bound(ctx)
	defer cancel()
	lease, err := l.client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, l.wrap("update", name, err)
	}
	l.remember(lease)
	if lease.ResourceVersion != rev {
		// The API server's answer to that update, which is not sent.
		return nil, l.wrap("update", name, apierrors.NewConflict(coordinationv1.Resource("leases"), name,
			fmt.Errorf("the Lease's resourceVersion is %s, not %q", lease.ResourceVersion, rev)))
	}
	return lease.DeepCopy(), nil
}

// remember keeps lease as the newest of its name, unless the one kept is newer: the watch
// delivers on a goroutine of its own, and an event may come after the answer to a later write
// (or a later get). Kept, that older Lease would not match the next update's resourceVersion.
func (l *leaseLock) remember(lease *coordinationv1.Lease) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if prev := l.last[lease.Name]; prev != nil && !newerVersion(lease.ResourceVersion, prev.ResourceVersion) {
		return
	}
	l.last[lease.Name] = lease
}

// newerVersion reports whether a is a newer resourceVersion of one object than b. Clients must
// treat a resourceVersion as opaque in general, but the API server's, for a single object
// over etcd, are etcd's revisions of its writes, integers that grow with every write: when
// both parse as unsigned integers, the larger is newer. When either does not (a server over
// another storage), they cannot be ordered, and a differing a counts as newer: the Lease that
// came last is kept, as before this order existed; an update that then finds no Lease of its
// resourceVersion reads it (current) rather than dropping what others wrote.
func newerVersion(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return a != b
	}
	return x > y
}

// record reads a Lease into a Record (decodeLease); a Lease that does not fit is an error
// naming it and its field, never taken over silently.
func (l *leaseLock) record(lease *coordinationv1.Lease) (cluster.Record, error) {
	r, err := decodeLease(lease)
	if err != nil {
		return cluster.Record{}, l.fail("read", lease.Name, err)
	}
	return r, nil
}

// encodeLease writes r into lease, its spec with leaseTransitions transitions and its
// annotations (the mapping of NewLeaseLock); the annotations it does not own are kept.
func encodeLease(lease *coordinationv1.Lease, r cluster.Record, transitions int32) error {
	if r.Term > maxTerm {
		return fmt.Errorf("term %d is above %d, the largest a Lease carries", r.Term, uint64(maxTerm))
	}
	setSpec(&lease.Spec, r, transitions)
	setTerm(&lease.ObjectMeta, r.Term, transitions)
	for _, f := range leaseFields {
		f.set(&lease.ObjectMeta, r)
	}
	return nil
}

// decodeLease reads a Lease into a Record; a Lease that does not fit (no resourceVersion, a
// negative term, a malformed annotation) is an error naming its field.
func decodeLease(lease *coordinationv1.Lease) (cluster.Record, error) {
	r := cluster.Record{Revision: lease.ResourceVersion}
	if r.Revision == "" {
		return cluster.Record{}, errors.New("metadata.resourceVersion is empty")
	}
	s := lease.Spec
	if s.HolderIdentity != nil {
		r.Holder = *s.HolderIdentity
	}
	term, err := termOf(lease.ObjectMeta, s)
	if err != nil {
		return cluster.Record{}, err
	}
	r.Term = term
	if s.AcquireTime != nil {
		r.AcquiredAt = s.AcquireTime.Time
	}
	if s.RenewTime != nil {
		r.RenewedAt = s.RenewTime.Time
	}
	if s.LeaseDurationSeconds != nil {
		r.Duration = time.Duration(*s.LeaseDurationSeconds) * time.Second
	}
	for _, f := range leaseFields {
		if err := f.read(lease.ObjectMeta, r.Term, &r); err != nil {
			return cluster.Record{}, err
		}
	}
	return r, nil
}

// setSpec writes r into a Lease spec (the mapping of NewLeaseLock), with leaseTransitions
// transitions.
func setSpec(s *coordinationv1.LeaseSpec, r cluster.Record, transitions int32) {
	holder := r.Holder
	secs := leaseSeconds(r.Duration)
	s.HolderIdentity = &holder
	s.LeaseTransitions = &transitions
	s.LeaseDurationSeconds = &secs
	s.AcquireTime = microTime(r.AcquiredAt)
	s.RenewTime = microTime(r.RenewedAt)
}

// transitionsAfter is the leaseTransitions of a Lease whose spec was prev once holder writes
// it. spec.leaseTransitions is, for the Lease API, the number of transitions of the lease
// between holders, and client-go's leaderelection counts them so (tryAcquireOrRenew): a
// candidate that does not find itself the holder adds 1 when it takes the Lease, a takeover of
// a released Lease ("" to a holder) included; a renewal and a release ("" written by the
// holder) keep the count. leasehold writes it by the same rule, so the count means one thing
// whoever wrote it. A new leadership under the same holder (the instance's own record taken
// again, another process of the same instance ID, E11, E12) is no change of holder, as for
// client-go: the term tells those apart (AnnotationTerm). The count stops at the largest
// int32 rather than wrapping to a negative one.
func transitionsAfter(prev coordinationv1.LeaseSpec, holder string) int32 {
	n := int32(0)
	if prev.LeaseTransitions != nil {
		n = max(*prev.LeaseTransitions, 0)
	}
	if holder != "" && (prev.HolderIdentity == nil || *prev.HolderIdentity != holder) && n < math.MaxInt32 {
		n++
	}
	return n
}

// leaseSeconds is d rounded up to whole seconds, at least 1: Kubernetes tools read
// leaseDurationSeconds to judge expiry, and rounding down would make a lease look expired
// before it is.
func leaseSeconds(d time.Duration) int32 {
	secs := (d + time.Second - 1) / time.Second
	if secs < 1 {
		return 1
	}
	if secs > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(secs)
}

func microTime(t time.Time) *metav1.MicroTime {
	if t.IsZero() {
		return nil
	}
	m := metav1.NewMicroTime(t)
	return &m
}

// wrap maps the API server's answers onto the cluster errors: NotFound is ErrNotFound, a 409
// Conflict or AlreadyExists is a lost race (ErrConflict). The API error stays reachable with
// errors.As. A Forbidden answer says which permissions the service needs.
func (l *leaseLock) wrap(op, name string, err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: %w", cluster.ErrNotFound, l.fail(op, name, err))
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		return fmt.Errorf("%w: %w", cluster.ErrConflict, l.fail(op, name, err))
	case apierrors.IsForbidden(err):
		return l.fail(op, name, fmt.Errorf("%w (the service needs get, create and update on leases.coordination.k8s.io in namespace %q)", err, l.namespace))
	}
	return l.fail(op, name, err)
}

func (l *leaseLock) fail(op, name string, err error) error {
	return fmt.Errorf("kubernetes: %s Lease %s/%s: %w", op, l.namespace, name, err)
}
