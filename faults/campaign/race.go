package campaign

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// raceEnv is the GORACE a worker runs with: the caller's, with the reports written to
// dir/race.PID instead of stderr, whose tail a long run would have cut them from.
func raceEnv(dir string) string {
	return "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" log_path="+filepath.Join(dir, "race"))
}

// raceReport returns the data race reports the worker of process pid wrote (raceEnv), after
// a heading, for a failure message: "" when there are none.
func raceReport(dir string, pid int) string {
	b, err := os.ReadFile(filepath.Join(dir, "race."+strconv.Itoa(pid)))
	if err != nil || len(b) == 0 {
		return ""
	}
	const keep = 16 << 10
	if len(b) > keep {
		b = b[:keep]
	}
	return fmt.Sprintf("\n--- data race reported by pid %d:\n%s", pid, b)
}

// procRace is raceReport for p, "" when its process did not run.
func procRace(dir string, p *proc) string {
	if p.Proc == nil || p.Cmd == nil || p.Cmd.Process == nil {
		return ""
	}
	return raceReport(dir, p.Cmd.Process.Pid)
}
