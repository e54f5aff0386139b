package proctest

import "syscall"

// setParentDeathSignal has the kernel SIGKILL the worker when the driver dies, even while
// the worker is stopped by SIGSTOP and could not read its stdin's EOF.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
