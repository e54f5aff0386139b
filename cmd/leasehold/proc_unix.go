//go:build unix

package main

import (
	"errors"
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

// notifySignals relays the signals run handles: SIGINT and SIGTERM stop leasehold; SIGHUP,
// SIGUSR1, SIGUSR2 and SIGWINCH are forwarded to CMD's group.
func notifySignals(c chan<- os.Signal) {
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH)
}

func isStopSignal(s os.Signal) bool { return s == syscall.SIGINT || s == syscall.SIGTERM }

// handleSIGPIPE keeps a write to a broken pipe from killing leasehold (`leasehold run ... 2>&1
// | head`): the write fails with EPIPE, and leasehold goes on, stops CMD and releases the
// lease. Without Notify, Go's runtime dies of SIGPIPE on such a write to stdout or stderr.
// signal.Ignore would do it too, but an ignored signal stays ignored across exec: the keeper
// and CMD would inherit it.
func handleSIGPIPE() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
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
