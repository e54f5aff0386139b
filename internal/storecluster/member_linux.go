package storecluster

import "syscall"

// dieWithParent has the kernel SIGKILL a server when the process that started it dies: a test
// binary that panics or times out skips its cleanups, and its servers must not outlive it.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
