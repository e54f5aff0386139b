//go:build unix

package health

import (
	"os/exec"
	"syscall"
)

func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the program and everything it started that stayed in
// its group; the group's id is the program's pid.
func killGroup(_ *exec.Cmd, pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
