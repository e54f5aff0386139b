// Package leaseconf holds the defaults and checks every constructor of an election applies to
// its settings, so that the library's constructors, the cluster services and the command
// refuse a configuration, or give it its defaults, the same way wherever it is written.
package leaseconf

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Defaults of an election's settings, those of Webda's cluster services.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewInterval = 5 * time.Second
	DefaultLeaseName     = "leader"
)

// MaxValueBytes bounds the value a holder publishes (V1).
const MaxValueBytes = 1024

// Names are the names under which a caller's users write L and R (Go fields, JSON
// parameters, flags), so that the one check of the timing rules names the parameter at fault
// in their own terms.
type Names struct {
	LeaseDuration, RenewInterval string
}

// ElectorNames are the Go field names of the library's configurations.
var ElectorNames = Names{LeaseDuration: "LeaseDuration", RenewInterval: "RenewInterval"}

// Timing applies the defaults to L and R (a zero value takes DefaultLeaseDuration or
// DefaultRenewInterval) and checks the rules of E0: L > 0 and 0 < R < L.
func Timing(l, r time.Duration, names Names) (time.Duration, time.Duration, error) {
	if l == 0 {
		l = DefaultLeaseDuration
	}
	if r == 0 {
		r = DefaultRenewInterval
	}
	if l < 0 {
		return 0, 0, fmt.Errorf("%s %v must be positive", names.LeaseDuration, l)
	}
	if r < 0 || r >= l {
		return 0, 0, fmt.Errorf("%s %v must be positive and less than %s %v", names.RenewInterval, r, names.LeaseDuration, l)
	}
	return l, r, nil
}

// LeaseName returns name, or DefaultLeaseName when it is empty: a program that prints or reads
// the lease its election uses resolves it as the constructors do.
func LeaseName(name string) string {
	if name == "" {
		return DefaultLeaseName
	}
	return name
}

// SlotName returns the name of the record of slot (0-based) of lease among n (H1, D6): the
// lease's own name when n is 1; otherwise what lock's SlotName method says, when it has one
// (holders.SlotNamer), or NAME/slot. The slots of N holders (holders.SlotName) and the
// partitions of a partitioned election are named so.
func SlotName(lock any, lease string, slot, n int) string {
	lease = LeaseName(lease)
	if n <= 1 {
		return lease
	}
	if sn, ok := lock.(slotNamer); ok {
		return sn.SlotName(lease, slot)
	}
	return lease + "/" + strconv.Itoa(slot)
}

// slotNamer is holders.SlotNamer, which this package cannot name.
type slotNamer interface {
	SlotName(lease string, slot int) string
}

// CheckValue returns an error naming name (the flag or parameter that set v) when v cannot be
// published: longer than MaxValueBytes, or more than one line (V1). Readers print the value
// alone on a line (leasehold leader), so a line break would make two answers of one.
func CheckValue(name, v string) error {
	if len(v) > MaxValueBytes {
		return fmt.Errorf("%s: the value is %d bytes, at most %d", name, len(v), MaxValueBytes)
	}
	if strings.ContainsAny(v, "\r\n") {
		return fmt.Errorf("%s: the value must be one line", name)
	}
	return nil
}
