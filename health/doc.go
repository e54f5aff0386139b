// Package health provides the checks an election can require to pass
// before its member leads.
//
// # What a check is
//
// A Check is a function of a context that returns nil when the thing it
// watches is healthy and an error saying why otherwise. The context bounds
// the check: when it ends, the check stops and reports the timeout or the
// cancellation. Shell and Command run a program, URL fetches a page.
//
// # How programs are run and killed
//
// Shell runs its script with /bin/sh -c, Command runs a program directly.
// Exit status 0 is healthy; any other status is an error naming the
// command, the status and the last line of its output, cut to 200 bytes
// so a chatty program cannot flood a log.
//
// On Unix systems the program runs in a process group of its own, and the
// whole group is killed with SIGKILL when the context ends and again when
// the check returns: a check that leaves a background process behind must
// not keep it alive past the check, since a check runs repeatedly and
// leftovers would pile up. On other systems only the program itself is
// killed.
package health
