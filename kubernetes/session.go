package kubernetes

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/cluster"
)

// The annotations of a Lease that carry the holder's session (E12): holderIdentity is all
// client-go reads, so the session lives beside it, as the resign annotations do.
const (
	// AnnotationSession is Record.Session, the token of the process that wrote
	// holderIdentity; absent in a released Lease.
	AnnotationSession = "leasehold.dev/session"
	// AnnotationSessionTerm is the term (termOf) AnnotationSession was written with. A
	// writer that does not know it (client-go's leaderelection) keeps the annotations of the
	// Lease it takes over and grows leaseTransitions, and so the term: the session, left from
	// an earlier term, then reads as absent, so no leasehold instance takes that writer's
	// Lease for its own, even under the same identity.
	AnnotationSessionTerm = "leasehold.dev/session-term"
)

// setSession writes r's session into the annotations of m, with the term it belongs to;
// a record without one (a release) removes both. Other annotations are kept.
func setSession(m *metav1.ObjectMeta, r cluster.Record) {
	setTermed(m, AnnotationSession, AnnotationSessionTerm, r.Session, r.Term)
}

// readSession reads the session of a Lease whose term is term into r: absent without the
// annotation, and when it was written for another term (AnnotationSessionTerm). A malformed
// term is an error naming the annotation.
func readSession(m metav1.ObjectMeta, term uint64, r *cluster.Record) error {
	a := m.Annotations
	if current, err := annotationsOfTerm(a, AnnotationSessionTerm, term); err != nil || !current {
		return err // malformed, or left by a writer that took the Lease over without knowing it
	}
	r.Session = a[AnnotationSession]
	return nil
}

func init() { registerLeaseFields(leaseField{setSession, readSession}) }
