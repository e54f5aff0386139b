package gocronlock_test

import (
	"context"
	"log"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/leasehold/leasehold/adapters/gocronlock"
	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/store/memory"
)

// Every replica runs the same scheduler; the jobs run on the replica that leads.
func ExampleNewElector() {
	shared := memory.New() // in production: a store every replica reaches (store.Open)
	el, err := cluster.NewElector(cluster.ElectorConfig{Lock: cluster.NewStoreLock(shared), LeaseName: "jobs"})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := el.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer el.Stop(ctx) // releases the lease: another replica leads within R
	elector, err := gocronlock.NewElector(el)
	if err != nil {
		log.Fatal(err)
	}
	s, err := gocron.NewScheduler(gocron.WithDistributedElector(elector))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := s.NewJob(gocron.CronJob("*/5 * * * *", false), gocron.NewTask(sendReport)); err != nil {
		log.Fatal(err)
	}
	s.Start()
	defer s.Shutdown()
}

// Every replica runs the same scheduler; each tick of a job runs on the replica whose run
// takes the job's key first. The jobs run every minute or less often, at whole minutes on
// every replica (cron), so a Hold of 30 s is within the rule: skew + R + δ < Hold <
// period − skew − δ.
func ExampleNewLocker() {
	shared := memory.New() // in production: a store every replica reaches (store.Open)
	locker, err := gocronlock.NewLocker(gocronlock.LockerConfig{
		Lock:      cluster.NewStoreLock(shared),
		Hold:      30 * time.Second, // above R (5 s by default), below the minute between ticks
		KeyPrefix: "jobs/",
	})
	if err != nil {
		log.Fatal(err)
	}
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := s.NewJob(gocron.CronJob("* * * * *", false), gocron.NewTask(sendReport), gocron.WithName("report")); err != nil {
		log.Fatal(err)
	}
	s.Start()
	defer func() {
		_ = s.Shutdown()
		// Keys taken by the last runs are kept until their Hold has passed.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = locker.Close(ctx)
	}()
}

func sendReport() {}
