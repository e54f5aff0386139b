package kubernetes

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/cluster"
)

// The annotations of a Lease that carry the value its holder publishes (V1): client-go reads
// nothing of them, so they live beside holderIdentity, as the session does.
const (
	// AnnotationValue is Record.Value; absent in a released Lease and when the holder
	// publishes nothing.
	AnnotationValue = "leasehold.dev/value"
	// AnnotationValueTerm is the term (termOf) AnnotationValue was written for. A writer
	// that does not know it (client-go's leaderelection) keeps the annotations of the Lease it
	// takes over and grows leaseTransitions, and so the term: the value, left from an earlier term,
	// then reads as absent, and the previous holder's address is not given as the new one's
	// (V2).
	AnnotationValueTerm = "leasehold.dev/value-term"
)

// setValue writes r's value into the annotations of m, with its term; a record without one
// (a release, a holder publishing nothing) removes both. Other annotations are kept.
func setValue(m *metav1.ObjectMeta, r cluster.Record) {
	setTermed(m, AnnotationValue, AnnotationValueTerm, r.Value, r.ValueTerm)
}

// readValue reads the value of a Lease whose term is term into r: absent without the two
// annotations, and when it was written for another term. A malformed term is an error naming
// the annotation.
func readValue(m metav1.ObjectMeta, term uint64, r *cluster.Record) error {
	v, ok := m.Annotations[AnnotationValue]
	if _, termOK := m.Annotations[AnnotationValueTerm]; !ok || !termOK {
		return nil
	}
	if current, err := annotationsOfTerm(m.Annotations, AnnotationValueTerm, term); err != nil || !current {
		return err // malformed, or left by a writer that took the Lease over without knowing it
	}
	r.Value, r.ValueTerm = v, term
	return nil
}

func init() { registerLeaseFields(leaseField{setValue, readValue}) }
