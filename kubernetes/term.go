package kubernetes

import (
	"fmt"
	"math"
	"strconv"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The annotations of a Lease that carry its term (Record.Term, E11). spec.leaseTransitions is
// the Lease API's count of changes of holder, which kubectl shows and client-go writes as
// such; the term is leasehold's fencing token, above every term the Lease gave before, even
// once the Lease is deleted and created again (its floor is read from the wall clock), so it
// cannot be a count that starts again at 0. It lives beside the count, with the count it was
// written with: a writer that does not know it (client-go's leaderelection) keeps the
// annotations of the Lease it takes over and adds 1 to the count, and that is how a reader
// knows the term moved on (termOf).
const (
	// AnnotationTerm is Record.Term, a decimal integer, written by every leasehold write.
	AnnotationTerm = "leasehold.dev/term"
	// AnnotationTermTransitions is the spec.leaseTransitions AnnotationTerm was written with.
	AnnotationTermTransitions = "leasehold.dev/term-transitions"
)

// maxTerm is the largest term a Lease carries: a term read is at most maxTerm + 1, which fits
// a uint64.
const maxTerm = math.MaxInt64

// setTerm writes term into the annotations of m, with transitions, the leaseTransitions of
// the same write. Other annotations are kept.
func setTerm(m *metav1.ObjectMeta, term uint64, transitions int32) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[AnnotationTerm] = strconv.FormatUint(term, 10)
	m.Annotations[AnnotationTermTransitions] = strconv.FormatInt(int64(transitions), 10)
}

// termOf reads the term of a Lease whose metadata is m and spec s. With n its leaseTransitions
// (0 when absent):
//
//   - AnnotationTerm T written with AnnotationTermTransitions N: T when n = N (the Lease as
//     leasehold wrote it, or renewed since by a writer that does not know the annotations).
//     Otherwise such a writer took the Lease over since: client-go, which adds 1 to
//     leaseTransitions, or a leasehold that kept its term in leaseTransitions (before
//     AnnotationTerm existed), which wrote there a term above every term it read. The term is
//     then max(T + 1, n): above T, so that the annotations written for T (session, value,
//     priority, resign) read as another term's, and n itself when an earlier leasehold wrote
//     it, so that the annotations it wrote for n read as current. A leaseTransitions lowered
//     by hand reads as T + 1 too. The next leasehold write sets both annotations again.
//   - No AnnotationTerm: n. A Lease written by a leasehold before AnnotationTerm existed kept
//     the term in leaseTransitions, so it reads with the term it was written with, and the
//     annotations written for that term read as current; a Lease only client-go wrote reads
//     with its count of changes of holder, which a leasehold takeover's new term exceeds as it
//     exceeds any term (max(n + 1, the highest term seen + 1, floor(now)), E11). The floor is
//     left to that takeover rather than read here: the term of a Lease nobody writes does not
//     change from one read to the next.
//
// A malformed or negative value, a term above maxTerm, or one annotation without the other is
// an error naming it: a Lease that does not fit is never taken over silently.
func termOf(m metav1.ObjectMeta, s coordinationv1.LeaseSpec) (uint64, error) {
	n := int32(0)
	if s.LeaseTransitions != nil {
		n = *s.LeaseTransitions
	}
	if n < 0 {
		return 0, fmt.Errorf("spec.leaseTransitions is %d, want a non-negative count", n)
	}
	ts, hasTerm := m.Annotations[AnnotationTerm]
	ns, hasN := m.Annotations[AnnotationTermTransitions]
	switch {
	case !hasTerm && !hasN:
		return uint64(n), nil
	case !hasN:
		return 0, fmt.Errorf("annotation %s is set without %s", AnnotationTerm, AnnotationTermTransitions)
	case !hasTerm:
		return 0, fmt.Errorf("annotation %s is set without %s", AnnotationTermTransitions, AnnotationTerm)
	}
	t, err := strconv.ParseUint(ts, 10, 64)
	if err != nil || t > maxTerm {
		return 0, fmt.Errorf("annotation %s is %q, want a term from 0 to %d", AnnotationTerm, ts, uint64(maxTerm))
	}
	written, err := strconv.ParseInt(ns, 10, 32)
	if err != nil || written < 0 {
		return 0, fmt.Errorf("annotation %s is %q, want a non-negative 32-bit count", AnnotationTermTransitions, ns)
	}
	if int64(n) == written {
		return t, nil
	}
	return max(t+1, uint64(n)), nil
}
