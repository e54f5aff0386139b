package kubernetes

import (
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/cluster"
)

// The annotations of a Lease that carry its holder's priority and health (Q1, U2): client-go
// reads nothing of them, so they live beside holderIdentity, as the value does. A preemption
// request's priority, AnnotationNextPriority, belongs to the resign annotations.
const (
	// AnnotationPriority is Record.Priority, a decimal integer; absent in a released Lease and
	// when the holder has priority 0 and is healthy.
	AnnotationPriority = "leasehold.dev/priority"
	// AnnotationUnhealthy is "true" when Record.Unhealthy, the holder reporting its health
	// check failing; absent otherwise. It is read only beside AnnotationPriority.
	AnnotationUnhealthy = "leasehold.dev/unhealthy"
	// AnnotationPriorityTerm is the term (termOf) the two annotations above were written for
	// (Record.PriorityTerm). A writer that does not know them (client-go's leaderelection)
	// keeps the annotations of the Lease it takes over and grows leaseTransitions, and so the
	// term: the priority and health, left from an earlier term, then read as
	// absent (priority 0, healthy), so the new holder is not ranked as the previous one.
	AnnotationPriorityTerm = "leasehold.dev/priority-term"
	// AnnotationNextPriority is Record.NextPriority, a decimal integer, present exactly when
	// Record.Preempt is set: a resign request written by a candidate that outranks the holder
	// (Q2), and the release answering it, which keeps it with the next holder (Q4). It is
	// tied to AnnotationResignTerm, as AnnotationNextHolder is.
	AnnotationNextPriority = "leasehold.dev/next-priority"
)

// setPriority writes r's priority and health into the annotations of m, with their term; a
// record without them (a release, a holder of priority 0 that is healthy) removes all three.
// Other annotations are kept.
func setPriority(m *metav1.ObjectMeta, r cluster.Record) {
	p := ""
	if r.Priority != 0 || r.Unhealthy {
		p = strconv.Itoa(r.Priority)
	}
	setTermed(m, AnnotationPriority, AnnotationPriorityTerm, p, r.PriorityTerm)
	if p != "" && r.Unhealthy {
		m.Annotations[AnnotationUnhealthy] = "true"
	} else {
		delete(m.Annotations, AnnotationUnhealthy)
	}
}

// readPriority reads the priority and health of a Lease whose term is term into r: absent
// without AnnotationPriority and AnnotationPriorityTerm, and when they were written for
// another term. A malformed value or term is an error naming the annotation.
func readPriority(m metav1.ObjectMeta, term uint64, r *cluster.Record) error {
	a := m.Annotations
	s, ok := a[AnnotationPriority]
	if _, termOK := a[AnnotationPriorityTerm]; !ok || !termOK {
		return nil
	}
	if current, err := annotationsOfTerm(a, AnnotationPriorityTerm, term); err != nil || !current {
		return err // malformed, or left by a writer that took the Lease over without knowing them
	}
	p, err := parsePriority(AnnotationPriority, s)
	if err != nil {
		return err
	}
	unhealthy := false
	switch v, ok := a[AnnotationUnhealthy]; {
	case !ok || v == "false":
	case v == "true":
		unhealthy = true
	default:
		return fmt.Errorf("annotation %s is %q, want true (or absent)", AnnotationUnhealthy, v)
	}
	r.Priority, r.Unhealthy, r.PriorityTerm = p, unhealthy, term
	return nil
}

// parsePriority reads the annotation key, whose value is s, as a priority: a decimal 32-bit
// integer, as ElectorConfig.Priority is. Anything else is an error naming the annotation.
func parsePriority(key, s string) (int, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("annotation %s is %q, want a 32-bit decimal integer", key, s)
	}
	return int(n), nil
}

func init() { registerLeaseFields(leaseField{setPriority, readPriority}) }
