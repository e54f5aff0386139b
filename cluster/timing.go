package cluster

import "time"

// Defaults of ElectorConfig, those of Webda's cluster services.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewInterval = 5 * time.Second
	DefaultLeaseName     = "leader"
)
