// Package supervise runs leasehold run's CMD for a leadership, under a keeper process that
// answers for CMD's whole process tree, so that no process of the tree outlives the
// leadership it ran under.
//
// [New] returns a [Supervisor] of CMD, as a [Config] describes it; its [Supervisor.Lead]
// method is the election's LeaderFunc, and returns once CMD's tree is gone.
// [Supervisor.Forward] sends a signal to CMD's process group, [Supervisor.SetStopSignal]
// chooses the signal that stops it, [Supervisor.Exited] reports CMD's status when it exits by
// itself, [Supervisor.HeldStatus] the status of a CMD whose lease is held after it
// ([Config].Hold), and [Supervisor.State] what runs and what ran, as a [State].
//
// The keeper is this same binary run again with [KeeperArg] as its first argument: main must
// hand such a command line to [KeeperMain] before anything else. [BecomeSubreaper] makes
// leasehold a child subreaper (Linux), so that the orphans of a killed keeper's tree come to
// it. [NotifySignals] relays the signals leasehold run handles, and [IsStopSignal] tells those
// that stop it from those for CMD.
//
// Everything but KeeperArg and KeeperMain is for unix systems only; elsewhere KeeperMain
// refuses to run.
package supervise

// KeeperArg, as the first argument, runs the keeper (KeeperMain): the supervisor starts it,
// never a user.
const KeeperArg = "__keeper"

// Exit statuses: the keeper's, and statusFailure for a CMD whose keeper died without
// reporting CMD's own.
const (
	statusOK      = 0
	statusFailure = 1
	statusUsage   = 2
)
