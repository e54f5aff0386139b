//go:build unix

package supervise

import (
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// signalGroup sends sig to the process group pgid; a group already gone is not an error.
func signalGroup(pgid int, sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return errors.New("not a unix signal")
	}
	err := syscall.Kill(-pgid, s)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// groupAlive reports whether a process of group pgid still runs (or is not yet reaped).
func groupAlive(pgid int) bool {
	return syscall.Kill(-pgid, 0) == nil
}

var (
	sigTerm os.Signal = syscall.SIGTERM
	sigKill os.Signal = syscall.SIGKILL
)

// NotifySignals relays to c the signals leasehold run handles: SIGINT and SIGTERM stop
// leasehold (IsStopSignal); SIGHUP, SIGUSR1, SIGUSR2 and SIGWINCH are for CMD's group
// (Supervisor.Forward).
func NotifySignals(c chan<- os.Signal) {
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH)
}

// IsStopSignal reports whether s, relayed by NotifySignals, stops leasehold: SIGINT or SIGTERM.
func IsStopSignal(s os.Signal) bool { return s == syscall.SIGINT || s == syscall.SIGTERM }

// BecomeSubreaper makes this process a child subreaper where the system has them (Linux), and
// reports whether it is one (Config.Reaper): should a keeper be killed, the orphans of its
// CMD's tree are reparented to leasehold, which ends them (see sweep). Not when leasehold is
// PID 1, nor when it already has children as it starts (`exec leasehold run` from a script
// that started others): processes that are none of CMD's could then come to it.
func BecomeSubreaper(log *slog.Logger) bool {
	if os.Getpid() == 1 || len(descendants(os.Getpid(), nil)) > 0 {
		log.Debug("leasehold: not a child subreaper: PID 1, or children already")
		return false
	}
	if err := setSubreaper(); err != nil {
		log.Debug("leasehold: not a child subreaper", "error", err)
		return false
	}
	return true
}

// exitStatus is a finished process's status as a shell reports it: its exit code, or 128+N
// when signal N ended it.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
		return waitStatus(ws)
	}
	return ps.ExitCode()
}

func waitStatus(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
