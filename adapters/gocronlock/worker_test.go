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
// Locker over the store of w.URL, and writes a run line for each run with its tick's
// scheduled time (runLine), besides the lines of proctest (ready, lead, unlead, stopped).
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
		opt, stop = gocron.WithDistributedElector(ge), el.Stop
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
		opt, stop = gocron.WithDistributedLocker(lk), lk.Close
	default:
		return w.Fail("%s %q: want elector or locker", envMode, mode)
	}
	s, err := gocron.NewScheduler(opt, gocron.WithSchedulerMonitor(runMonitor{id: w.ID}),
		gocron.WithLogger(gocron.NewLogger(gocron.LogLevelError)))
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

// runLine is a worker's line for one run of the job: "<instance> run <scheduled> <delay>
// <started>", the tick's scheduled time in Unix nanoseconds, how long after it the run
// started, and the run's start on proctest's shared clock.
type runLine struct {
	instance  string
	scheduled time.Time
	delay     time.Duration
	started   int64
}

func (r runLine) String() string {
	return fmt.Sprintf("%s run %d %d %d", r.instance, r.scheduled.UnixNano(), r.delay, r.started)
}

// parseRunLine parses a run line; ok is false for the other lines.
func parseRunLine(s string) (r runLine, ok bool, err error) {
	f := strings.Fields(s)
	if len(f) != 5 || f[1] != "run" {
		return runLine{}, false, nil
	}
	var n [3]int64
	for i := range n {
		if n[i], err = strconv.ParseInt(f[2+i], 10, 64); err != nil {
			return runLine{}, true, fmt.Errorf("run line %q: %w", s, err)
		}
	}
	return runLine{instance: f[0], scheduled: time.Unix(0, n[0]), delay: time.Duration(n[1]), started: n[2]}, true, nil
}

// runMonitor writes a run line when a run starts: gocron reports each run that passed the
// Elector or the Locker with the time it was scheduled for, just before calling the job.
type runMonitor struct{ id string }

func (m runMonitor) JobSchedulingDelay(_ gocron.Job, scheduled, started time.Time) {
	proctest.WriteStdout(runLine{instance: m.id, scheduled: scheduled, delay: started.Sub(scheduled), started: proctest.Now()}.String())
}

func (runMonitor) SchedulerStarted()                          {}
func (runMonitor) SchedulerStopped()                          {}
func (runMonitor) SchedulerShutdown()                         {}
func (runMonitor) JobRegistered(gocron.Job)                   {}
func (runMonitor) JobUnregistered(gocron.Job)                 {}
func (runMonitor) JobStarted(gocron.Job)                      {}
func (runMonitor) JobRunning(gocron.Job)                      {}
func (runMonitor) JobFailed(gocron.Job, error)                {}
func (runMonitor) JobCompleted(gocron.Job)                    {}
func (runMonitor) JobExecutionTime(gocron.Job, time.Duration) {}
func (runMonitor) ConcurrencyLimitReached(string, gocron.Job) {}

var _ gocron.SchedulerMonitor = runMonitor{}
