// Package recordtest builds lease records for the tests of the Locks' encodings (the store
// document, the Kubernetes Lease): every exported field of cluster.Record is set by
// reflection, so that a field added to Record is written and read back by those tests without
// editing them, and a Lock that does not encode it fails them.
package recordtest

import (
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

// Held returns a record of term term held since at, whose every exported field is set to a
// value of its own that is not zero: strings name their field, ints are negative and distinct,
// bools are true, times are at plus a whole number of microseconds (a Lease's precision) apart,
// the duration is a whole number of seconds (a Lease's). Every uint64 field is term: a field's
// term (ValueTerm, PriorityTerm) is the record's in a record its holder writes, and a Lease
// keeps only what it wrote for its current term. A field of a kind not listed here fails the
// test, naming it, until the kind is added.
func Held(t testing.TB, term uint64, at time.Time) cluster.Record {
	t.Helper()
	if term == 0 {
		t.Fatal("recordtest: Held needs a term above 0, or its uint64 fields would be zero")
	}
	var r cluster.Record
	v := reflect.ValueOf(&r).Elem()
	for i := range v.NumField() {
		f, sf := v.Field(i), v.Type().Field(i)
		if !sf.IsExported() {
			continue
		}
		switch {
		case sf.Type == reflect.TypeFor[time.Time]():
			f.Set(reflect.ValueOf(at.UTC().Add(time.Duration(i) * time.Second).Add(time.Duration(i) * time.Microsecond)))
		case sf.Type == reflect.TypeFor[time.Duration]():
			f.SetInt(int64(time.Duration(i+1) * time.Second))
		case f.Kind() == reflect.String:
			f.SetString(sf.Name + "-" + strconv.Itoa(i) + " é&?=")
		case f.Kind() == reflect.Uint64:
			f.SetUint(term)
		case f.Kind() == reflect.Int:
			f.SetInt(-int64(i + 1))
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		default:
			t.Fatalf("recordtest: field %s of cluster.Record is a %s, which Held cannot set yet", sf.Name, sf.Type)
		}
	}
	return r
}

// Released returns the record that gives up r with nothing pending: every exported field zero
// but the lease's Term and Duration and the Revision, so that a Lock that leaves a field of
// the record it replaces in place fails the test that writes it over r.
func Released(r cluster.Record) cluster.Record {
	return cluster.Record{Term: r.Term, Duration: r.Duration, Revision: r.Revision}
}

// Diff names the exported fields of got that differ from want, "" when none does.
func Diff(got, want cluster.Record) string {
	g, w := reflect.ValueOf(got), reflect.ValueOf(want)
	diff := ""
	for i := range g.NumField() {
		sf := g.Type().Field(i)
		if !sf.IsExported() {
			continue
		}
		a, b := g.Field(i).Interface(), w.Field(i).Interface()
		if ta, ok := a.(time.Time); ok && ta.Equal(b.(time.Time)) {
			continue
		}
		if a != b {
			diff += "\n\t" + sf.Name + ": got " + format(a) + ", want " + format(b)
		}
	}
	return diff
}

func format(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}
