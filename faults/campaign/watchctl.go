package campaign

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/leasehold/leasehold/internal/proctest"
)

// The driver sets a worker's watch fault (a WatchFault) through a control file of the worker's
// own and SIGUSR1: it writes the fault's text in the file (renamed into place, so that the
// worker never reads half of it), signals the worker, and waits for the worker's "watch" line
// on stdout saying that the fault is in force.
const (
	envWatchControl = "LEASEHOLD_FAULTS_WATCH_CONTROL" // the control file's path
	watchSignal     = syscall.SIGUSR1
)

// serveWatchControl makes the worker apply the control file's fault to fw at each SIGUSR1 and
// report it (a watchLine), or the file's wall-clock offset (a clockLine), or its health
// check's answer to health (a healthLine; nil outside the Ranked mode). It catches SIGUSR1 at
// once, before the worker reports ready; fw nil (a Lock that cannot watch) reports the fault
// without applying it.
func serveWatchControl(id, path string, fw *FaultyWatcher, health *healthSwitch) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, watchSignal)
	go func() {
		for range sig {
			b, err := os.ReadFile(path)
			if err != nil {
				fmt.Fprintf(os.Stderr, "faults worker %s: %s: %v\n", id, envWatchControl, err)
				continue
			}
			if ok, err := applyClock(id, string(b)); ok {
				if err != nil {
					fmt.Fprintf(os.Stderr, "faults worker %s: %v\n", id, err)
				}
				continue
			}
			if ok, err := applyHealth(id, string(b), health); ok {
				if err != nil {
					fmt.Fprintf(os.Stderr, "faults worker %s: %v\n", id, err)
				}
				continue
			}
			f, err := ParseWatchFault(string(b))
			if err != nil {
				fmt.Fprintf(os.Stderr, "faults worker %s: %v\n", id, err)
				continue
			}
			if fw != nil {
				fw.Set(f)
			}
			proctest.WriteStdout(watchLine{Instance: id, T: proctest.Now(), Fault: f}.String())
		}
	}()
}

// writeWatchControl writes f into the control file at path.
func writeWatchControl(path string, f WatchFault) error { return writeControl(path, f.String()) }

// writeControl writes text into the control file at path, renamed into place.
func writeControl(path, text string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".watch-*")
	if err != nil {
		return err
	}
	_, err = tmp.WriteString(text)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// watchLine reports on a worker's stdout that a watch fault is in force.
type watchLine struct {
	Instance string
	T        int64
	Fault    WatchFault
}

func (l watchLine) String() string { return fmt.Sprintf("watch %s %d %s", l.Instance, l.T, l.Fault) }

func parseWatchLine(s string) (watchLine, bool) {
	f := strings.Fields(s)
	if len(f) < 4 || f[0] != "watch" {
		return watchLine{}, false
	}
	t, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return watchLine{}, false
	}
	wf, err := ParseWatchFault(strings.Join(f[3:], " "))
	if err != nil {
		return watchLine{}, false
	}
	return watchLine{Instance: f[1], T: t, Fault: wf}, true
}

// setWatch puts f in force in worker p and waits for p to say so; it returns when.
func (d *driver) setWatch(p *proc, f WatchFault) (int64, error) {
	n := p.watchAcks
	if err := writeWatchControl(p.watchControl, f); err != nil {
		return 0, fmt.Errorf("campaign: watch control of %s: %w", p.ID, err)
	}
	if err := p.Signal(watchSignal); err != nil {
		return 0, err
	}
	err := d.wait("watch fault "+f.String()+" in force in "+p.ID, exitTimeout, func() bool {
		return p.exited || p.watchAcks > n && p.watch == f
	})
	if err == nil && p.exited {
		err = fmt.Errorf("worker %s exited before its watch fault %s was in force", p.ID, f)
	}
	return p.watchAt, err
}
