// Package kubelock lets client-go's leader election, and so a controller-runtime Manager,
// elect over a leasehold store (PostgreSQL, MySQL, Redis, etcd, NATS, SQLite, a file...)
// instead of a Kubernetes Lease: [New] returns a resourcelock.Interface whose record is a
// document of the store.
//
//	st, err := store.Open(ctx, "postgres://...")
//	lock, err := kubelock.New(st, "my-controller", hostname)
//	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
//		Lock: lock, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second,
//		RetryPeriod: 2 * time.Second, Callbacks: ...,
//	})
//
// or, with controller-runtime, manager.Options{LeaderElection: true,
// LeaderElectionResourceLockInterface: lock, ...}.
//
// # The document
//
// The record of lock NAME is the document "kubelock:NAME": client-go's LeaderElectionRecord
// (holderIdentity, leaseDurationSeconds, acquireTime, renewTime, leaderTransitions, strategy,
// preferredHolder) and a random revision, replaced at each write. Update is a Patch
// conditioned on the revision the lock last read or wrote, so a write that someone else's came
// between fails with a conflict, as an Update of a Lease whose resourceVersion changed does:
// client-go's election relies on that compare-and-swap and on nothing else from the store.
//
// # Timing: client-go's rules, not leasehold's
//
// The election is client-go's LeaderElector, unchanged; the store only keeps its record. Its
// rules hold, and leasehold's (docs/design.md, E1...) do not:
//
//   - A candidate takes over only after it has seen the record unchanged for LeaseDuration by
//     its own clock (it times from when it read a change, not from the renewTime written in
//     the record). Nodes' clocks need not agree, but they must run at about the same rate.
//   - The leader renews every RetryPeriod. When its renewals have failed for RenewDeadline
//     (counted from RetryPeriod after its last success), it stops: it cancels the context it
//     gave OnStartedLeading, then calls OnStoppedLeading. Its last renewal may thus be up to
//     RetryPeriod+RenewDeadline old when it stops, and the others wait at least LeaseDuration
//     from when they saw it: keep LeaseDuration > RenewDeadline + RetryPeriod + the time a store
//     call may take + the time the work takes to stop on the context's end (client-go checks
//     only LeaseDuration > RenewDeadline > 1.2*RetryPeriod). Its defaults are 15s, 10s, 2s.
//   - A leader that finds another holder in the record does not stop at once: it keeps trying
//     until RenewDeadline has passed, and only then stops. OnStoppedLeading is a report, not a
//     deadline: nothing waits for the work to end.
//   - LeaseDuration is stored in whole seconds: one under a second would read as 0, an expired
//     lease, so the lock refuses to write such a record (the elector logs the error and never
//     leads). Give whole seconds.
//   - A release (ReleaseOnCancel) writes an empty holder: the others take over at their next
//     try instead of after LeaseDuration.
//
// So, with a store that keeps its acknowledged writes: at most one candidate's acquisition or
// renewal succeeds on each version of the record, and while the leader's process runs at the
// rate of the others' clocks and its store calls end within their context, no other
// candidate leads before it has stopped. What client-go does not guarantee: a leader whose
// process is paused (a GC pause, a stopped VM) for longer than LeaseDuration resumes believing
// it leads until its next renewal fails, while another leads; a store call that hangs past its
// context; work that ignores the context's end. Guard work against these with a fencing token.
//
// A controller-runtime Manager adds its own rule: when it loses the lease (after RenewDeadline,
// as above), its Start cancels its runnables' context and returns "leader election lost"
// without waiting for them to end, and the program is expected to exit. A runnable that
// ignores its context may run on while another Manager leads.
//
// # Fencing
//
// [Lock.Term], read in OnStartedLeading, returns the record's leaderTransitions: client-go adds
// one each time a candidate other than the record's holder acquires the lease, under the
// compare-and-swap, so it grows with each change of holder. A resource that remembers the
// highest term it has seen and refuses writes with a lower one refuses a deposed leader's. Its
// limits: a holder that re-acquires its own expired lease, nobody having held it meanwhile,
// keeps its term; deleting the document starts the count again at 0 (do not delete it: write
// an empty holder instead); identities must be unique.
//
// # Errors
//
// A missing document, a conflict and a document that already exists are errors for which
// apierrors.IsNotFound, IsConflict and IsAlreadyExists hold, as client-go expects of an API
// server; the store's error ([store.ErrNotFound], [store.ErrConditionFailed],
// [store.ErrExists]) stays in their chain. A document the lock cannot read is an error naming
// its key and field: the elector neither renews nor takes over until it is mended.
package kubelock
