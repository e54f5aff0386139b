package recordtest

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

// Held leaves no exported field of Record zero, and Released keeps only the term, the
// duration and the revision: the tests that write them cover every field only so.
func TestHeldSetsEveryField(t *testing.T) {
	held := Held(t, 7, time.Date(2026, 12, 4, 19, 40, 1, 0, time.UTC))
	v := reflect.ValueOf(held)
	for i := range v.NumField() {
		if sf := v.Type().Field(i); sf.IsExported() && v.Field(i).IsZero() {
			t.Errorf("Held left field %s zero", sf.Name)
		}
	}
	if got, want := Released(held), (cluster.Record{Term: 7, Duration: held.Duration, Revision: held.Revision}); got != want {
		t.Errorf("Released(Held) = %+v, want %+v", got, want)
	}
	if d := Diff(held, held); d != "" {
		t.Errorf("Diff of a record and itself: %s", d)
	}
	if d := Diff(Released(held), held); !strings.Contains(d, "Holder: got \"\", want \"Holder-") || !strings.Contains(d, "Unhealthy: got false, want true") {
		t.Errorf("Diff(Released(held), held) = %s; want Holder and Unhealthy named", d)
	}
}
