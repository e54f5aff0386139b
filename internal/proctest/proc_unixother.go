//go:build unix && !linux

package proctest

import "syscall"

// setParentDeathSignal does nothing: without a parent-death signal, a worker notices its
// driver's death by its stdin's EOF (unless it is stopped then).
func setParentDeathSignal(*syscall.SysProcAttr) {}
