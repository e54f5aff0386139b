package campaign

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold/leasehold/internal/proctest"
	"github.com/leasehold/leasehold/internal/wallclock"
)

// A clock jump moves one worker's wall clock (the readings its elections write: the term's
// floor, the times in a record) by an hour either way, through the watch faults' control file
// and signal: the file then says "clock OFFSET". The machine's clock is not touched, and the
// worker's monotonic clock, by which every decision is taken, goes on (M2).
const clockPrefix = "clock "

// clockLine reports on a worker's stdout that a wall-clock offset is in force.
type clockLine struct {
	Instance string
	T        int64
	Offset   time.Duration
}

func (l clockLine) String() string {
	return fmt.Sprintf("clock %s %d %s", l.Instance, l.T, l.Offset)
}

func parseClockLine(s string) (clockLine, bool) {
	f := strings.Fields(s)
	if len(f) != 4 || f[0] != "clock" {
		return clockLine{}, false
	}
	t, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return clockLine{}, false
	}
	d, err := time.ParseDuration(f[3])
	if err != nil {
		return clockLine{}, false
	}
	return clockLine{Instance: f[1], T: t, Offset: d}, true
}

// applyClock puts in force the offset of a control file's text "clock OFFSET", reports it, and
// says whether the text was one.
func applyClock(id, text string) (bool, error) {
	rest, ok := strings.CutPrefix(text, clockPrefix)
	if !ok {
		return false, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(rest))
	if err != nil {
		return true, fmt.Errorf("clock control %q: %w", text, err)
	}
	wallclock.Set(d)
	proctest.WriteStdout(clockLine{Instance: id, T: proctest.Now(), Offset: d}.String())
	return true, nil
}

// setClock puts a wall-clock offset in force in worker p and waits for p to say so; it returns
// when.
func (d *driver) setClock(p *proc, offset time.Duration) (int64, error) {
	n := p.clockAcks
	if err := writeControl(p.watchControl, clockPrefix+offset.String()); err != nil {
		return 0, fmt.Errorf("campaign: clock control of %s: %w", p.ID, err)
	}
	if err := p.Signal(watchSignal); err != nil {
		return 0, err
	}
	err := d.wait(fmt.Sprintf("clock offset %s in force in %s", offset, p.ID), exitTimeout, func() bool {
		return p.exited || p.clockAcks > n && p.clock == offset
	})
	if err == nil && p.exited {
		err = fmt.Errorf("worker %s exited before its clock offset %s was in force", p.ID, offset)
	}
	return p.clockAt, err
}
