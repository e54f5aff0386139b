//go:build !unix

package proctest

import (
	"os"
	"syscall"
)

// sysProcAttr is the default: without process groups, a worker gets the signals itself.
func sysProcAttr() *syscall.SysProcAttr { return nil }

func signalGroup(p *os.Process, sig syscall.Signal) error { return p.Signal(sig) }
