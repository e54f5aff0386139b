package kubernetes

import (
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/cluster"
)

// A leaseField is how some fields of cluster.Record go into a Lease's annotations and come
// back out, beyond those the Lease's spec and the term carry (holder, times, duration,
// revision, term; see NewLeaseLock). A feature that adds fields to Record registers its
// leaseField from its own file (registerLeaseFields, in an init), and encodeLease and
// decodeLease go through them all: the Lock names no feature.
type leaseField struct {
	// set writes r's fields into the annotations of m, and removes those it owns that r
	// leaves unset, so that they never outlive the record they were written for. Other
	// annotations are kept.
	set func(m *metav1.ObjectMeta, r cluster.Record)
	// read reads them from a Lease whose term is term into r, zero when absent (a Lease
	// written before they existed, or by another writer) and when written for another term.
	// A malformed annotation is an error naming it.
	read func(m metav1.ObjectMeta, term uint64, r *cluster.Record) error
}

// leaseFields are the registered fields, in the order of registration.
var leaseFields []leaseField

func registerLeaseFields(fields ...leaseField) { leaseFields = append(leaseFields, fields...) }

// setTermed writes value under key and the term it belongs to under termKey, or removes both
// when value is empty. Other annotations are kept: client-go keeps a Lease's annotations when
// it takes it over, which is what makes the term tell a stale pair from a current one.
func setTermed(m *metav1.ObjectMeta, key, termKey, value string, term uint64) {
	if value == "" {
		delete(m.Annotations, key)
		delete(m.Annotations, termKey)
		return
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[key] = value
	m.Annotations[termKey] = strconv.FormatUint(term, 10)
}

// annotationsOfTerm says whether annotations written for a term (named by the annotation
// termKey, which a writer that does not know them leaves behind when it takes the Lease over,
// changing the term) are those of the Lease's term: true when termKey is absent (annotations
// written before it existed). A malformed termKey is an error naming it.
func annotationsOfTerm(a map[string]string, termKey string, term uint64) (bool, error) {
	s, ok := a[termKey]
	if !ok {
		return true, nil
	}
	t, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return false, fmt.Errorf("annotation %s is %q, want a non-negative term", termKey, s)
	}
	return t == term, nil
}
