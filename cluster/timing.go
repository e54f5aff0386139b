package cluster

import (
	"fmt"
	"time"
)

// Defaults of ElectorConfig, those of Webda's cluster services.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewInterval = 5 * time.Second
	DefaultLeaseName     = "leader"
)

// TimingNames are the names under which a caller's users write L and R (Go fields, JSON
// parameters, flags), so that the one check of the timing rules names the parameter at fault
// in their own terms.
type TimingNames struct {
	LeaseDuration, RenewInterval string
}

// ElectorNames are ElectorConfig's field names, the names NewElector's errors use.
var ElectorNames = TimingNames{LeaseDuration: "LeaseDuration", RenewInterval: "RenewInterval"}

// ResolveTiming applies the defaults to L and R (a zero value takes DefaultLeaseDuration or
// DefaultRenewInterval) and checks the rules of E0: L > 0 and 0 < R < L. NewElector, the
// cluster services and the command all go through it, so a configuration is refused, or given
// its defaults, the same way wherever it is written.
func ResolveTiming(l, r time.Duration, names TimingNames) (time.Duration, time.Duration, error) {
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

// ResolveLeaseName returns name, or DefaultLeaseName when it is empty, as every constructor
// here does: a program that prints or reads the lease its election uses resolves it the same way.
func ResolveLeaseName(name string) string {
	if name == "" {
		return DefaultLeaseName
	}
	return name
}
