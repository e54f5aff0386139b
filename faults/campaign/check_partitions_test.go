package campaign

import (
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/proctest"
)

// checkPartitions holds each partition to the lease's rules on its own: two owners of one
// partition at once, or an owner change without a new term, are violations naming the
// partition; owners of different partitions at once, and a partition with no log, are not.
func TestCheckPartitions(t *testing.T) {
	l := testOptions().LeaseDuration
	good := [][]proctest.Line{
		linesOf(iv("w1.1", 1, 0, 500), iv("w2.1", 2, 600, 900)),
		linesOf(iv("w2.1", 1, 0, 400), iv("w3.1", 5, 450, 900)), // at the same time as partition 0's owners
		nil, // never owned: no log
	}
	n, vs := checkPartitions(good, nil, l)
	if len(vs) != 0 || n != 4 {
		t.Errorf("good partitions: %d ownerships, violations %q; want 4, none", n, vs)
	}

	bad := [][]proctest.Line{
		linesOf(iv("w1.1", 1, 0, 500)),
		linesOf(iv("w1.1", 3, 0, 500), iv("w2.1", 4, 300, 900)), // two owners from 300 to 500
		linesOf(iv("w1.1", 7, 0, 500), iv("w3.1", 7, 600, 900)), // a new owner, the same term
		linesOf(iv("w2.1", 9, 0, 500), iv("w3.1", 8, 600, 900)), // the term went down
	}
	_, vs = checkPartitions(bad, nil, l)
	want := []string{
		"partition 1: two leaders at once",
		"partition 2: the leader changed but not the term",
		"partition 3: the term went down",
	}
	if len(vs) != len(want) {
		t.Fatalf("violations %q; want %d: %q", vs, len(want), want)
	}
	for i, w := range want {
		if !strings.HasPrefix(vs[i], w) {
			t.Errorf("violation %d: %q; want one starting %q", i, vs[i], w)
		}
	}
}
