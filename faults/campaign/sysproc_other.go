//go:build !linux

package campaign

import "syscall"

// sysProcAttr puts a worker in a process group of its own. Without a parent-death signal, a
// worker notices the runner's death by its stdin's EOF (unless it is stopped then).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
