package proctest

import (
	"os"
	"time"

	"github.com/leasehold/leasehold/cluster"
)

// Observer returns the cluster.Event observer MaybeWorker's worker uses, for worker programs
// of other packages (the fault campaign's): it appends instance id's lead, renew and unlead
// lines to log, each with one O_APPEND write on the shared clock (Now), and writes them to
// stdout too. l and r are the Elector's LeaseDuration and RenewInterval, from which it derives
// each line's deadline. Like the worker's, it exits the process when a line cannot be written:
// a log with a hole in it would prove nothing. It must run on the election goroutine (as an
// ElectorConfig.Observer does), one event at a time.
func Observer(id string, l, r time.Duration, log *os.File) func(cluster.Event) {
	rec := &recorder{id: id, half: (l + r) / 2, log: log}
	return rec.observe
}
