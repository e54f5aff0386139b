package campaign

import (
	"bytes"
	"io"
	"os"

	"github.com/leasehold/leasehold/internal/proctest"
)

// partitionOwners follows the partitions' logs while the campaign runs. The workers write only
// partition 0's lines on stdout, and settle must know that every partition has an owner: a
// fault injected while some are still unowned would leave their takeover to the fault before.
type partitionOwners struct {
	logs []string
	off  []int64  // how far each log has been read
	tail [][]byte // each log's last line, until it is whole
	// open are each partition's ownerships that have a lead line and no unlead line yet, with
	// the last deadline logged: a killed worker's stay open for good, and end by their deadline.
	open []map[string]int64
}

func newPartitionOwners(dir string, k int) *partitionOwners {
	po := &partitionOwners{off: make([]int64, k), tail: make([][]byte, k), open: make([]map[string]int64, k)}
	for p := range k {
		po.logs = append(po.logs, partitionLog(dir, p))
		po.open[p] = map[string]int64{}
	}
	return po
}

// unowned returns the partitions that no ownership holds at now, on the shared clock. The
// ownerships of the instances in exited hold no partition, whatever their deadline: a killed
// worker's partitions count as unowned until another worker owns them, so that settle waits for
// their takeover and the next fault does not fall within it (a paused worker holding a store's
// file lock would stop that takeover for as long as it stays paused).
func (po *partitionOwners) unowned(now int64, exited map[string]bool) []int {
	po.read()
	var out []int
	for p, open := range po.open {
		owned := false
		for id, deadline := range open {
			owned = owned || (deadline > now && !exited[id])
		}
		if !owned {
			out = append(out, p)
		}
	}
	return out
}

// read takes in the lines written to each log since the last read. A line that does not parse
// is skipped: the analysis reads every log again at the end, and fails on it.
func (po *partitionOwners) read() {
	for p, path := range po.logs {
		f, err := os.Open(path)
		if err != nil {
			continue // no worker has created it yet
		}
		b, _ := io.ReadAll(io.NewSectionReader(f, po.off[p], 1<<62))
		f.Close()
		po.off[p] += int64(len(b))
		b = append(po.tail[p], b...)
		i := bytes.LastIndexByte(b, '\n')
		po.tail[p] = bytes.Clone(b[i+1:])
		for _, s := range bytes.Split(b[:i+1], []byte{'\n'}) {
			l, err := proctest.ParseLine(string(s))
			if len(s) == 0 || err != nil {
				continue
			}
			switch l.Kind {
			case proctest.KindLead:
				po.open[p][l.Instance] = l.Deadline
			case proctest.KindRenew:
				if d, ok := po.open[p][l.Instance]; ok {
					po.open[p][l.Instance] = max(d, l.Deadline)
				}
			case proctest.KindUnlead:
				delete(po.open[p], l.Instance)
			}
		}
	}
}
