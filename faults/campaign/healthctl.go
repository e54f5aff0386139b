package campaign

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/leasehold/leasehold/internal/proctest"
)

// In the Ranked mode the runner decides what each worker's health check answers (U1-U3),
// through the control file and signal of the watch faults and clock jumps: the file then says
// "health fail" or "health ok", and the worker reports "health ID T fail|ok" once the answer
// is in force. Its Elector runs the check every R as usual; only the answer is the runner's.
const healthPrefix = "health "

// errHealthFailing is the check's answer while the runner makes it fail.
var errHealthFailing = errors.New("faults: the runner makes this health check fail")

// healthSwitch is a worker's health check, failing while the runner says so.
type healthSwitch struct{ failing atomic.Bool }

// check is the worker's ElectorConfig.Health.
func (h *healthSwitch) check(context.Context) error {
	if h.failing.Load() {
		return errHealthFailing
	}
	return nil
}

// healthLine reports on a worker's stdout that its check fails, or passes, from T on.
type healthLine struct {
	Instance string
	T        int64
	Fail     bool
}

func (l healthLine) String() string {
	return fmt.Sprintf("health %s %d %s", l.Instance, l.T, healthWord(l.Fail))
}

func healthWord(fail bool) string {
	if fail {
		return "fail"
	}
	return "ok"
}

func parseHealthLine(s string) (healthLine, bool) {
	f := strings.Fields(s)
	if len(f) != 4 || f[0] != "health" || (f[3] != "fail" && f[3] != "ok") {
		return healthLine{}, false
	}
	t, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return healthLine{}, false
	}
	return healthLine{Instance: f[1], T: t, Fail: f[3] == "fail"}, true
}

// applyHealth puts in force the answer of a control file's text "health fail" or "health ok"
// in h, reports it, and says whether the text was one. h nil (a worker outside the Ranked
// mode, which has no check) is an error.
func applyHealth(id, text string, h *healthSwitch) (bool, error) {
	rest, ok := strings.CutPrefix(text, healthPrefix)
	if !ok {
		return false, nil
	}
	var fail bool
	switch strings.TrimSpace(rest) {
	case "fail":
		fail = true
	case "ok":
	default:
		return true, fmt.Errorf("health control %q: want \"health fail\" or \"health ok\"", text)
	}
	if h == nil {
		return true, fmt.Errorf("health control %q: this worker has no health check (not the Ranked mode)", text)
	}
	h.failing.Store(fail)
	proctest.WriteStdout(healthLine{Instance: id, T: proctest.Now(), Fail: fail}.String())
	return true, nil
}

// setHealth makes worker p's check fail or pass and waits for p to say so; it returns when.
func (d *driver) setHealth(p *proc, fail bool) (int64, error) {
	n := p.healthAcks
	if err := writeControl(p.watchControl, healthPrefix+healthWord(fail)); err != nil {
		return 0, fmt.Errorf("campaign: health control of %s: %w", p.ID, err)
	}
	if err := p.Signal(watchSignal); err != nil {
		return 0, err
	}
	err := d.wait(fmt.Sprintf("health %s in force in %s", healthWord(fail), p.ID), exitTimeout, func() bool {
		return p.exited || p.healthAcks > n && p.failing == fail
	})
	if err == nil && p.exited {
		err = fmt.Errorf("worker %s exited before its health check said %s", p.ID, healthWord(fail))
	}
	return p.healthAt, err
}
