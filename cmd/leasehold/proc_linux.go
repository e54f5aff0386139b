//go:build linux

package main

import "syscall"

// childAttr puts CMD in a process group of its own (so that leasehold can signal everything
// it started) and asks the kernel to SIGKILL it when its parent dies: if leasehold is killed
// (SIGKILL, OOM), CMD dies at once and never outlives its supervisor's lease.
//
// The kernel sends the parent-death signal when the *thread* that forked the child exits, not
// the process (prctl(2), go.dev/issue/27505). The Go runtime ends a thread when a goroutine
// exits while locked to it, so the goroutine that starts CMD locks its thread and keeps it
// locked until CMD has exited (see startChild).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

const pdeathsig = true
