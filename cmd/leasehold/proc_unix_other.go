//go:build unix && !linux

package main

import "syscall"

// childAttr puts CMD in a process group of its own. There is no parent-death signal outside
// Linux (and FreeBSD, not used here): if leasehold is killed with SIGKILL, CMD keeps running.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

const pdeathsig = false
