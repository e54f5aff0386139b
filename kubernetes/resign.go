package kubernetes

import (
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/cluster"
)

// The annotations of a Lease that carry a resign (rules R1-R4): a LeaseSpec has no field
// every API server keeps for them.
//
// spec.preferredHolder is not used. It belongs to coordinated leader election
// (the CoordinatedLeaderElection feature gate, off by default), and an API server without the
// gate drops it, together with spec.strategy, on every create and update without an error
// (TestPreferredHolderDropped shows it against the test's kube-apiserver). The annotation
// AnnotationNextHolder is the only source of truth for the next holder.
const (
	// AnnotationResignRequested is Record.ResignRequested, an RFC 3339 time (UTC, with
	// nanoseconds); absent when no resign is pending.
	AnnotationResignRequested = "leasehold.dev/resign-requested-at"
	// AnnotationNextHolder is Record.NextHolder; absent when nobody is named.
	AnnotationNextHolder = "leasehold.dev/next-holder"
	// AnnotationResignTerm is the term (termOf) the two annotations above were written with.
	// A writer that does not know them (client-go's leaderelection, an older leasehold) keeps
	// the annotations of the Lease it updates; when such a writer takes the Lease over,
	// leaseTransitions grows, and so the term, and the annotations, left from an earlier term,
	// read as absent. A Lease annotated by hand without it has its request read as it is.
	AnnotationResignTerm = "leasehold.dev/resign-term"
)

// setResign writes r's resign request, next holder and, for a preemption, the next holder's
// priority into the annotations of m. Every write names them all: a record without them (a
// renewal, a takeover) removes them, as the store lock's empty fields do, so they never
// outlive the record they were written for. A release keeps the next holder and the
// preemption it answers, of the same term. Other annotations are kept.
func setResign(m *metav1.ObjectMeta, r cluster.Record) {
	if r.ResignRequested.IsZero() && r.NextHolder == "" && !r.Preempt {
		delete(m.Annotations, AnnotationResignRequested)
		delete(m.Annotations, AnnotationNextHolder)
		delete(m.Annotations, AnnotationNextPriority)
		delete(m.Annotations, AnnotationResignTerm)
		return
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	if r.ResignRequested.IsZero() {
		delete(m.Annotations, AnnotationResignRequested)
	} else {
		m.Annotations[AnnotationResignRequested] = r.ResignRequested.UTC().Format(time.RFC3339Nano)
	}
	if r.NextHolder == "" {
		delete(m.Annotations, AnnotationNextHolder)
	} else {
		m.Annotations[AnnotationNextHolder] = r.NextHolder
	}
	if r.Preempt {
		m.Annotations[AnnotationNextPriority] = strconv.Itoa(r.NextPriority)
	} else {
		delete(m.Annotations, AnnotationNextPriority)
	}
	m.Annotations[AnnotationResignTerm] = strconv.FormatUint(r.Term, 10)
}

// readResign reads the resign annotations of a Lease whose term is term into r; a next
// priority (AnnotationNextPriority) marks the request, or the release answering it, as a
// preemption (Record.Preempt). A Lease without them (written before they existed, or by
// another writer) has nothing pending; so have annotations of another term
// (AnnotationResignTerm). A malformed value is an error naming the annotation, as a malformed
// field is.
func readResign(m metav1.ObjectMeta, term uint64, r *cluster.Record) error {
	a := m.Annotations
	if current, err := annotationsOfTerm(a, AnnotationResignTerm, term); err != nil || !current {
		return err // malformed, or left by a writer that took the Lease over without knowing them
	}
	if s := a[AnnotationResignRequested]; s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return fmt.Errorf("annotation %s is %q, want an RFC 3339 time", AnnotationResignRequested, s)
		}
		r.ResignRequested = t
	}
	r.NextHolder = a[AnnotationNextHolder]
	if s, ok := a[AnnotationNextPriority]; ok {
		p, err := parsePriority(AnnotationNextPriority, s)
		if err != nil {
			return err
		}
		r.Preempt, r.NextPriority = true, p
	}
	return nil
}

func init() { registerLeaseFields(leaseField{setResign, readResign}) }
