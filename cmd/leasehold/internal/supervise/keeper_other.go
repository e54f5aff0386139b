//go:build !unix

package supervise

// KeeperMain runs the keeper; there is none without process groups and POSIX signals, and it
// returns the status of a usage error.
func KeeperMain([]string) int { return statusUsage }
