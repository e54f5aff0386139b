package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/store"
)

// version is set at link time (-ldflags "-X main.version=v1.2.3"); otherwise the module's
// version from the build information is printed.
var version = ""

func versionCommand(args []string, stdout io.Writer) (int, error) {
	if len(args) > 0 {
		return 0, badInput("Usage: leasehold version\n", "version takes no arguments, got %q", args[0])
	}
	v := version
	var rev string
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				rev = s.Value
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	fmt.Fprintf(stdout, "leasehold %s %s %s/%s\n", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if rev != "" {
		fmt.Fprintf(stdout, "revision: %s\n", rev)
	}
	fmt.Fprintf(stdout, "stores: %s\n", strings.Join(store.Schemes(), ", "))
	fmt.Fprintf(stdout, "service types: %s\n", strings.Join(leasehold.ServiceTypes(), ", "))
	if missing := missingBackends(); len(missing) > 0 {
		fmt.Fprintf(stdout, "built without: %s\n", strings.Join(missing, ", "))
	}
	return exitOK, nil
}
