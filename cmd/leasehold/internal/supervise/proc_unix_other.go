//go:build unix && !linux

package supervise

import (
	"errors"
	"os"
	"syscall"
)

// keeperAttr puts the keeper in a process group of its own. There is no parent-death signal
// outside Linux (and FreeBSD, not used here): the keeper notices leasehold's death by the end
// of its control pipe, and by polling getppid.
func keeperAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// cmdAttr puts CMD in a process group of its own: the tree the keeper can reach here.
func cmdAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// keeperPath is the executable the keeper is run from: this binary.
func keeperPath() (string, error) { return os.Executable() }

// setSubreaper: there is no child subreaper here (FreeBSD's procctl(PROC_REAP_ACQUIRE) is
// not used): orphaned processes go to init, out of the keeper's reach.
func setSubreaper() error { return errors.ErrUnsupported }

// descendants: without /proc, the keeper knows of CMD's process group only.
func descendants(int, func(int) bool) []int { return nil }
