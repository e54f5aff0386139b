package kubernetes

import (
	"strconv"

	"github.com/leasehold/leasehold/cluster/holders"
)

var _ holders.SlotNamer = (*leaseLock)(nil)

// SlotName names the Lease of slot (0-based) of lease among N holders (H1): NAME-slot, since
// a Lease's name is a DNS-1123 subdomain and cannot hold holders.SlotName's "/". When NAME is
// a valid Lease name, NAME-slot is one too, as long as it stays within 253 characters: it
// ends with a digit and adds only "-" and digits. A longer one is refused by the API server,
// and the slot's attempts fail naming it.
//
// NAME-slot is also the name a single-holder lease may have ("jobs-0"), and the two are then
// one Lease: every election on it, of a slot or not, follows the same rules and takes it only
// by compare-and-swap, so it still never has two holders at once, but the two elections
// share one leader. Give a lease of N holders a name that no other lease in the namespace
// extends with "-" and a number. A "." instead of "-" would not help: "jobs.0" is a valid
// lease name as well, and "-" reads as Kubernetes tools name the objects of a set
// (StatefulSet pods are NAME-0, NAME-1, ...).
func (l *leaseLock) SlotName(lease string, slot int) string {
	return lease + "-" + strconv.Itoa(slot)
}
