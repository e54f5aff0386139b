package cluster

import "github.com/leasehold/leasehold/internal/leaseconf"

// Defaults of ElectorConfig, those of Webda's cluster services.
const (
	DefaultLeaseDuration = leaseconf.DefaultLeaseDuration
	DefaultRenewInterval = leaseconf.DefaultRenewInterval
	DefaultLeaseName     = leaseconf.DefaultLeaseName
)
