//go:build unix

package proctest

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(a)
	return a
}

// signalGroup signals the process group Setpgid made, whose ID is the worker's process ID.
func signalGroup(p *os.Process, sig syscall.Signal) error { return syscall.Kill(-p.Pid, sig) }
