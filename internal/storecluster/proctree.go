//go:build unix

package storecluster

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// signalTree sends sig to the process group of the member's process pid and to the process
// groups of all its descendants. A server may put its children in groups of their own
// (PostgreSQL's postmaster starts every backend and auxiliary process in a session of its own):
// a signal to the member's group alone would stop or kill the postmaster and leave its backends
// answering, so that a paused primary would still commit, and a paused standby still
// acknowledge WAL.
//
// SIGKILL first stops the tree (SIGSTOP), so that no child is reparented, and lost from sight,
// nor forks, between the look and the kill. Descendants are found through /proc; without it
// (not Linux), only the member's group is signalled.
func signalTree(pid int, sig syscall.Signal) error {
	var groups []int
	var err error
	if sig == syscall.SIGKILL {
		_ = signalTree(pid, syscall.SIGSTOP)
		groups = descendantGroups(pid) // before the leader dies: its children are then reparented
		err = syscall.Kill(-pid, sig)
	} else {
		// The leader first: a stopped postmaster starts no new child while its children are
		// found.
		err = syscall.Kill(-pid, sig)
		groups = descendantGroups(pid)
	}
	for _, g := range groups {
		if g != pid {
			_ = syscall.Kill(-g, sig)
		}
	}
	return err
}

// descendantGroups returns the process groups of the descendants of pid, from /proc.
func descendantGroups(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	group := map[int]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 {
			continue
		}
		ppid, err1 := strconv.Atoi(f[1])
		pgrp, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			continue
		}
		children[ppid] = append(children[ppid], p)
		group[p] = pgrp
	}
	var groups []int
	seen := map[int]bool{}
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		p := queue[0]
		if g := group[p]; !seen[g] {
			seen[g] = true
			groups = append(groups, g)
		}
		queue = append(queue, children[p]...)
	}
	return groups
}
