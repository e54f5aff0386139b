package kubetest

import "syscall"

// dieWithParent makes the kernel kill the child when the test binary dies.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
