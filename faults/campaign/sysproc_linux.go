package campaign

import "syscall"

// sysProcAttr puts a worker in a process group of its own and has the kernel SIGKILL it when
// the runner dies, even while it is stopped by SIGSTOP (it could not read its stdin's EOF).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
