// Command leasehold runs a command on one instance only, with lease-based leader election over
// any leasehold backend: like `consul lock` or a Kubernetes leader-elector sidecar.
//
//	leasehold run [flags] -- CMD [ARGS...]    run CMD while this instance leads
//	leasehold status [flags] [--json]         who holds the lease (exit 3 when nobody does)
//	leasehold repair [flags]                  replace a corrupt lease record, the term kept growing
//	leasehold leader [flags]                  the value the leader publishes (run --advertise)
//	leasehold resign [flags] [--to ID]        ask the leader to step down (and whom to hand over to)
//	leasehold demo [--instances N] [--duration D]
//	leasehold version
//	leasehold completion bash|zsh
//
// Exit status: 0 success (status: someone holds the lease), 1 a failure at run time (one line
// saying what failed: the store, a connection, credentials), 2 bad input (one line saying what
// is wrong, then a line pointing to --help), 3 status, leader and resign: nobody holds the lease, 4 leader: the leader publishes no value. run exits with CMD's status when
// CMD exits by itself (128+N when a signal N ended it). run --try and --wait exit 75
// (EX_TEMPFAIL) when another instance holds the lease.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/supervise"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == supervise.KeeperArg {
		os.Exit(supervise.KeeperMain(os.Args[2:])) // leasehold run's keeper, between it and CMD
	}
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	exitNoLease = 3
	exitNoValue = 4 // leader: the leader publishes nothing (V3)
)

const usage = `leasehold runs a command on one instance only, with lease-based leader election.

Usage:
  leasehold run [flags] -- CMD [ARGS...]    run CMD while this instance leads the lease
                                            (--try, --wait D: exit 75 when another holds it)
  leasehold status [flags] [--json]         show who holds the lease (exit 3 when nobody does)
                                            (--watch: a line per change of holder, until ^C)
  leasehold repair [flags]                  replace a corrupt lease record by a released one,
                                            its term above the last
  leasehold leader [flags]                  print the value the leader publishes (run
                                            --advertise): exit 3 nobody leads, 4 no value
  leasehold resign [flags] [--to ID]        ask the leader to step down, optionally naming the
                                            next one (exit 3 when nobody holds the lease)
  leasehold demo [--instances N] [--duration D]
                                            watch an election with crashes, in one process
  leasehold version                         print the version and the linked stores
  leasehold completion bash|zsh             print a shell completion script

Run 'leasehold COMMAND --help' for a command's flags.

Exit status:
  0    success; status: someone holds the lease
  1    a failure: the store cannot be opened or read (unreachable, credentials refused, a URL
       parameter its backend rejects), the election cannot start, repair refuses; one line
       on stderr says what failed
  2    bad input: an unknown command or flag, a bad flag value, a store URL that does not
       parse or whose backend is not built in, a bad --config; one line, then where to
       read the usage
  3    status, leader, resign: nobody holds the lease
  4    leader: the leader publishes no value (it runs without --advertise)
  run exits with CMD's status when CMD exits by itself (128+N when signal N ended it)
`

// usageError is bad input: Main prints it on one line, then a line pointing to the command's
// --help (not the usage itself, which would bury the line that says what is wrong), and exits 2.
type usageError struct {
	msg   string
	usage string // the command's usage; the general one when empty
}

// helpPointer is the line after a usage error: where to read the usage of the command whose
// usage text is usage (its first line, "Usage: leasehold run ..."), or the general one, for a
// command whose usage is that one line (version), which has no --help of its own.
func helpPointer(usage string) string {
	cmd := "leasehold"
	first, rest, _ := strings.Cut(usage, "\n")
	if strings.HasPrefix(first, "Usage: leasehold ") && strings.TrimSpace(rest) != "" {
		if f := strings.Fields(first); len(f) >= 3 && !strings.HasPrefix(f[2], "[") {
			cmd += " " + f[2]
		}
	}
	return fmt.Sprintf("Run '%s --help' for usage.", cmd)
}

func (e *usageError) Error() string { return e.msg }

func badInput(usage, format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...), usage: usage}
}

// Main runs the command line args and returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "leasehold: missing command\n%s\n", helpPointer(""))
		return exitUsage
	}
	var code int
	var err error
	switch args[0] {
	case "run":
		code, err = runCommand(args[1:], stdout, stderr)
	case "status":
		code, err = statusCommand(args[1:], stdout, stderr)
	case "repair":
		code, err = repairCommand(args[1:], stdout, stderr)
	case "leader":
		code, err = leaderCommand(args[1:], stdout, stderr)
	case "resign":
		code, err = resignCommand(args[1:], stdout, stderr)
	case "demo":
		code, err = demoCommand(args[1:], stdout, stderr)
	case "version", "--version", "-version":
		code, err = versionCommand(args[1:], stdout)
	case "completion":
		code, err = completionCommand(args[1:], stdout)
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		err = badInput("", "unknown command %q", args[0])
	}
	if err == nil {
		return code
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "leasehold: %s\n%s\n", oneLine(ue.msg), helpPointer(ue.usage))
		return exitUsage
	}
	fmt.Fprintf(stderr, "leasehold: %s\n", explain(oneLine(err.Error())))
	return exitFailure
}
