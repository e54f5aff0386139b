//go:build unix && !linux

package storecluster

import "syscall"

// dieWithParent does nothing where the kernel has no parent-death signal: there a server
// outlives a test binary that dies without its cleanups.
func dieWithParent(*syscall.SysProcAttr) {}
