//go:build !linux

package kubetest

import "syscall"

// dieWithParent: only Linux can tie a child's life to its parent's; elsewhere the harness's
// cleanup stops the servers.
func dieWithParent() *syscall.SysProcAttr { return nil }
