// Package leasehold runs work on exactly one replica of an application: the leader, elected on
// a lease, with Webda's cluster API.
//
// With several replicas, every replica runs every timer. Work that must run once for the whole
// application (cron ticks, pollers, cleanups) runs through WhenLeader: fn runs when this
// instance becomes the leader, with a context cancelled when that leadership ends, and
// deregistered runs when it ends.
//
// # Applications
//
// An Application is built from a Webda-style JSON configuration:
//
//	{"services": {
//	  "Registry": {"type": "Webda/PostgresStore", "url": "postgres://app@db/app"},
//	  "cluster":  {"type": "Webda/StoreClusterService", "leaseDuration": 15000, "renewInterval": 5000},
//	  "poller":   {"type": "MyApp/Poller", "interval": "10s"}
//	}}
//
// ParseConfig or LoadConfig reads it, New creates the services (an unknown type or parameter
// is an error naming the service), Start initializes them (the Registry first, then the others
// in the configuration's order) and Stop ends leadership, then stops the services in reverse
// order. Service types are registered by name with RegisterServiceType, from init functions:
// import a backend's package to make its types and URL scheme available.
//
// # Clusters
//
// (*Application).Cluster returns the first configured service that implements
// cluster.Cluster: Webda/StoreClusterService (a lease in the Registry, any store) or
// Webda/KubernetesClusterService (a coordination.k8s.io Lease, from the kubernetes module).
// Without one, the application is a single instance and its cluster always leads.
// UseCluster and WhenLeader do the same for the application started last, or for a local
// cluster when there is none.
//
// # Guarantees
//
// See package cluster for the election's timing: a leader stops leading before its lease can
// have expired for the others; a crashed leader is replaced within leaseDuration +
// renewInterval of its last renewal, one that stops cleanly within renewInterval.
package leasehold
