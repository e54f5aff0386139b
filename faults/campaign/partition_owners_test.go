package campaign

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/proctest"
)

// The driver's settle waits for every partition to have an owner, by the partitions' logs:
// an ownership holds until its unlead line, or its last deadline when none comes, and not at
// all once its worker has exited (killed); a line not yet whole is read once it is.
func TestPartitionOwners(t *testing.T) {
	dir := t.TempDir()
	po := newPartitionOwners(dir, 3)
	if un := po.unowned(0, nil); !slices.Equal(un, []int{0, 1, 2}) {
		t.Fatalf("no logs: unowned %v", un)
	}
	write := func(p int, s string) {
		f, err := os.OpenFile(partitionLog(dir, p), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	str := func(ls []proctest.Line) string {
		var b strings.Builder
		for _, l := range ls {
			b.WriteString(l.String() + "\n")
		}
		return b.String()
	}
	write(0, str(owns("w1.1", 1, 0, 1000, "")))      // killed: held until 1375ms
	write(1, str(owns("w2.1", 1, 0, 500, "resign"))) // released
	half := str(owns("w3.1", 2, 600, 700, "")[:1])   // a lead line written in two parts
	write(2, str(owns("w1.1", 1, 0, 300, "deadline"))+half[:10])
	if un := po.unowned(1000*ms1, nil); !slices.Equal(un, []int{1, 2}) {
		t.Errorf("at 1s: unowned %v; want [1 2]", un)
	}
	write(2, half[10:])
	write(1, str(owns("w3.1", 2, 600, 700, "")[:1]))
	if un := po.unowned(1000*ms1, nil); len(un) != 0 {
		t.Errorf("at 1s, once every line is whole: unowned %v; want none", un)
	}
	if un := po.unowned(1000*ms1, map[string]bool{"w1.1": true}); !slices.Equal(un, []int{0}) {
		t.Errorf("at 1s, w1.1 exited: unowned %v; want [0], its partition before its deadline", un)
	}
	if un := po.unowned(1400*ms1, nil); !slices.Equal(un, []int{0, 1, 2}) {
		t.Errorf("at 1.4s, past every deadline: unowned %v; want all", un)
	}
}

// In the partitions mode the election is healthy, and the runner settles, only once every
// partition has an owner: partition 0's leader is not enough. The driver is woken to look
// again, as a claim of another partition writes nothing on its workers' stdout.
func TestHealthyWaitsForEveryPartition(t *testing.T) {
	dir := t.TempDir()
	d := &driver{owners: newPartitionOwners(dir, 2), leader: "w1.1"}
	d.slots = []*slot{{n: 1}}
	d.slots[0].cur = &proc{slot: d.slots[0], ready: true, attempts: "ok"}
	lead := func(p int, id string) {
		l := proctest.Line{Instance: id, Kind: proctest.KindLead, Term: 1, T: proctest.Now(), Deadline: proctest.Now() + int64(time.Hour)}
		if err := os.WriteFile(partitionLog(dir, p), []byte(l.String()+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lead(0, "w1.1")
	if d.healthy() || len(d.timers) != 1 {
		t.Errorf("partition 1 without an owner: healthy %v, %d wake-ups scheduled; want false, 1", d.healthy(), len(d.timers))
	}
	lead(1, "w1.1")
	if !d.healthy() {
		t.Errorf("every partition owned: not healthy")
	}
}

// owns is the lines of id's ownership of a partition, of term term, from start to end (in ms):
// a lead, renewals every 250 ms (deadline 625 ms later), and an unlead for reason (none when
// reason is "": a killed worker's).
func owns(id string, term uint64, start, end int64, reason string) []proctest.Line {
	const half = 625
	ls := []proctest.Line{{Instance: id, Kind: proctest.KindLead, Term: term, T: start * ms1, Deadline: (start + half) * ms1}}
	for t := start + 250; t < end; t += 250 {
		ls = append(ls, proctest.Line{Instance: id, Kind: proctest.KindRenew, Term: term, T: t * ms1, Deadline: (t + half) * ms1})
	}
	if reason != "" {
		ls = append(ls, proctest.Line{Instance: id, Kind: proctest.KindUnlead, Term: term, T: end * ms1, Reason: reason})
	}
	return ls
}
