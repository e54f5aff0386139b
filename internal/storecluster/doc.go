// Package storecluster starts a store as a cluster of real server processes on loopback, for
// tests and the fault campaign: etcd members, NATS servers with a replicated bucket, Redis with
// a replica and Sentinels, PostgreSQL with a streaming standby, ZooKeeper ensembles. Each server is a process of its
// own, so a test can kill it (SIGKILL), pause it (SIGSTOP), resume it and start it again on the
// same data, as production clusters fail.
//
// A Cluster says which member the cluster itself treats as its leader or primary, can fail
// over to another member (with or without losing the writes the old one acknowledged but had
// not replicated), and restarts as a whole. The servers' own binaries are found by the starters
// of each backend (the files named after them); a missing binary is reported with
// ErrUnavailable so that a test can skip, or fail when servers are required.
package storecluster
