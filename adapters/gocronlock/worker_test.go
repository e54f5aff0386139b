package gocronlock_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/leasehold/leasehold/adapters/gocronlock"
	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/proctest"
	"github.com/leasehold/leasehold/store"
	_ "github.com/leasehold/leasehold/store/postgres"
	_ "github.com/leasehold/leasehold/store/redis"
)

// The worker's configuration beyond proctest.Config.
const (
	envMode = "GOCRONLOCK_MODE" // "elector" or "locker"
	envHold = "GOCRONLOCK_HOLD" // LockerConfig.Hold, for the locker
)

func TestMain(m *testing.M) {
	proctest.ServeWorker("gocronlock", runWorker)
	os.Exit(m.Run())
}

// runWorker runs a gocron scheduler with one job a second, distributed by an Elector or a
// Locker over the store of w.URL, and writes a run line for each run with its tick
// (runLine), besides the lines of proctest (ready, lead, unlead, stopped).
func runWorker(w *proctest.Worker) int {
	ctx := context.Background()
	st, err := store.Open(ctx, w.URL)
	if err != nil {
		return w.Fail("%v", err)
	}
	defer store.Close(st)
	lock := cluster.NewStoreLock(st)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var (
		opt  gocron.SchedulerOption
		stop func(context.Context) error
	)
	switch mode := os.Getenv(envMode); mode {
	case "elector":
		el, err := cluster.NewElector(cluster.ElectorConfig{
			Lock: lock, LeaseName: w.Lease, LeaseDuration: w.LeaseDuration, RenewInterval: w.RenewInterval,
			InstanceID: w.ID, Logger: quiet, Observer: w.Observer(),
		})
		if err != nil {
			return w.Fail("%v", err)
		}
		if err := el.Start(ctx); err != nil {
			return w.Fail("%v", err)
		}
		ge, err := gocronlock.NewElector(el)
		if err != nil {
			return w.Fail("%v", err)
		}
		opt, stop = gocron.WithDistributedElector(reportingElector{ge, w.ID}), el.Stop
	case "locker":
		hold, err := time.ParseDuration(os.Getenv(envHold))
		if err != nil {
			return w.Fail("%s: %v", envHold, err)
		}
		lk, err := gocronlock.NewLocker(gocronlock.LockerConfig{
			Lock: lock, InstanceID: w.ID, LeaseDuration: w.LeaseDuration, RenewInterval: w.RenewInterval,
			Logger: quiet, Observer: w.Observer(), Hold: hold, KeyPrefix: w.Lease + "/",
		})
		if err != nil {
			return w.Fail("%v", err)
		}
		opt, stop = gocron.WithDistributedLocker(reportingLocker{lk, w.ID}), lk.Close
	default:
		return w.Fail("%s %q: want elector or locker", envMode, mode)
	}
	s, err := gocron.NewScheduler(opt, gocron.WithLogger(gocron.NewLogger(gocron.LogLevelError)))
	if err != nil {
		return w.Fail("%v", err)
	}
	if _, err := s.NewJob(gocron.CronJob("* * * * * *", true), gocron.NewTask(func() {}), gocron.WithName("tick")); err != nil {
		return w.Fail("%v", err)
	}
	s.Start()
	w.Ready()
	<-w.Term()
	err = s.Shutdown()
	sctx, cancel := context.WithTimeout(ctx, w.LeaseDuration)
	defer cancel()
	if serr := stop(sctx); err == nil {
		err = serr
	}
	return w.Stopped(err)
}

// runLine is a worker's line for one run of the job: "<instance> run <tick> <fired> <delay>
// <started>": the tick in Unix nanoseconds, how long after it gocron asked the Elector or the
// Locker (the tick fired), how long after it the run was let through, and that instant on
// proctest's shared clock.
type runLine struct {
	instance string
	tick     time.Time
	fired    time.Duration
	delay    time.Duration
	started  int64
}

func (r runLine) String() string {
	return fmt.Sprintf("%s run %d %d %d %d", r.instance, r.tick.UnixNano(), r.fired, r.delay, r.started)
}

// parseRunLine parses a run line; ok is false for the other lines.
func parseRunLine(s string) (r runLine, ok bool, err error) {
	f := strings.Fields(s)
	if len(f) != 6 || f[1] != "run" {
		return runLine{}, false, nil
	}
	var n [4]int64
	for i := range n {
		if n[i], err = strconv.ParseInt(f[2+i], 10, 64); err != nil {
			return runLine{}, true, fmt.Errorf("run line %q: %w", s, err)
		}
	}
	return runLine{instance: f[0], tick: time.Unix(0, n[0]), fired: time.Duration(n[1]), delay: time.Duration(n[2]), started: n[3]}, true, nil
}

// reportRun writes the run line of a run that gocron asked about at asked and that was let
// through. The job runs every whole second (a cron job): its tick is the whole second
// nearest to asked, since gocron asks as the tick fires. (gocron's own scheduled time, as its
// SchedulerMonitor reports it, stays on an old tick after skipped runs.)
func reportRun(id string, asked time.Time) {
	tick := asked.Round(period)
	proctest.WriteStdout(runLine{instance: id, tick: tick, fired: asked.Sub(tick), delay: time.Since(tick), started: proctest.Now()}.String())
}

// reportingElector and reportingLocker write a run line for each run they let through: the
// job runs right after, on the same goroutine.
type reportingElector struct {
	e  *gocronlock.Elector
	id string
}

func (r reportingElector) IsLeader(ctx context.Context) error {
	asked := time.Now()
	err := r.e.IsLeader(ctx)
	if err == nil {
		reportRun(r.id, asked)
	}
	return err
}

type reportingLocker struct {
	l  *gocronlock.Locker
	id string
}

func (r reportingLocker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	asked := time.Now()
	lk, err := r.l.Lock(ctx, key)
	if err == nil {
		reportRun(r.id, asked)
	}
	return lk, err
}
