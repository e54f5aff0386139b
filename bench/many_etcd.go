package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/leasehold/leasehold/internal/proctest"
)

// viaEtcdMutex is the many worker of the etcd anchor: etcd's concurrency.Mutex, one per key,
// all on one Session, the etcd counterpart of keys held through one Locker.
const (
	viaEtcdMutex      = "etcd-mutex"
	kindManyEtcdMutex = "many-etcd-mutex"
)

// measureManyEtcd runs the etcd anchor of the keys held through one Locker, at each count of
// o.ManyEtcd, against the bench's etcd.
func measureManyEtcd(o options, srv *servers, rep *report, logf func(string, ...any), newFleet func(sys system, n int) *fleet) error {
	if len(o.ManyEtcd) == 0 {
		return nil
	}
	sys, err := srv.system("etcd-concurrency")
	if errors.Is(err, errUnavailable) {
		rep.Skipped = append(rep.Skipped, fmt.Sprintf("keys held through etcd's Mutex: %v", err))
		return nil
	}
	if err != nil {
		return err
	}
	for _, n := range o.ManyEtcd {
		logf("bench: etcd: %d keys in one process, through concurrency.Mutex on one Session", n)
		f := newFleet(sys, n)
		row, err := many(f, n, o.Window)
		f.close()
		if err != nil {
			return fmt.Errorf("etcd, %d keys through concurrency.Mutex: %w", n, err)
		}
		row.Backend = "etcd concurrency.Mutex"
		logManyLocker(logf, row, o.R)
		if row.Unconfirmed > 0 {
			rep.Anomalies = append(rep.Anomalies, fmt.Sprintf("etcd, %d keys through concurrency.Mutex: %d held keys missing from etcd", n, row.Unconfirmed))
		}
		rep.Many = append(rep.Many, row)
	}
	return nil
}

// runManyEtcdMutex holds n keys through n concurrency.Mutex on one Session (TTL L, in whole
// seconds rounded up) of one etcd client, as runManyLocker holds them through one Locker:
// a bounded pool of goroutines locks them, the Mutexes kept in a slice, the same window and
// the same figures. Every key is lost at once when the Session's lease ends. At the end it
// counts the keys under the run's prefix in etcd: fewer than held are keys the Session lost
// without closing Done (Unconfirmed).
func runManyEtcdMutex(w *proctest.Worker) int {
	n, err := strconv.Atoi(os.Getenv(envMany))
	if err != nil || n <= 0 {
		return w.Fail("%s=%q: want a positive number", envMany, os.Getenv(envMany))
	}
	window, err := time.ParseDuration(os.Getenv(envWindow))
	if err != nil {
		return w.Fail("%s: %v", envWindow, err)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   strings.Split(w.URL, ","),
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{
			grpc.WithChainUnaryInterceptor(countUnary),
			grpc.WithChainStreamInterceptor(countStream),
		},
	})
	if err != nil {
		return w.Fail("%s: %v", proctest.EnvURL, err)
	}
	defer cli.Close()
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(int((w.LeaseDuration+time.Second-1)/time.Second)))
	if err != nil {
		return w.Fail("session: %v", err)
	}
	ctx := context.Background()
	prefix := "/leasehold-bench/" + w.Lease + "/"

	heap0 := liveHeap()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = prefix + strconv.Itoa(i)
	}
	held := make([]*concurrency.Mutex, n)
	heap1 := liveHeap()
	rss1 := rssBytes()

	c := newManyCounters()
	res := manyResult{Leases: n, Window: window, Via: viaEtcdMutex}
	res.Locker = &lockerFigures{HarnessPerKey: (heap1 - heap0) / int64(n)}
	acquireCtx, giveUp := context.WithTimeout(ctx, max(30*time.Second, 20*w.LeaseDuration))
	start := time.Now()
	var next, heldN atomic.Int64
	var wg sync.WaitGroup
	for range min(n, manyAcquirers) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				m := concurrency.NewMutex(sess, keys[i])
				if m.Lock(acquireCtx) != nil {
					return // the wait gave up, or the Session ended
				}
				held[i] = m
				heldN.Add(1)
			}
		})
	}
	wg.Wait()
	giveUp()
	res.ReadyAfter = time.Since(start)
	res.Leading = int(heldN.Load())

	open := func() int {
		select {
		case <-sess.Done():
			return 0
		default:
			return int(heldN.Load())
		}
	}
	openAtStart := open()
	r0 := requests.Load()
	c.measure(&res, window, func() {
		res.LeadingAtEnd = open()
		res.Locker.Writes = requests.Load() - r0 // keep-alives: etcd's requests are its session's
	})
	res.Lost = int64(openAtStart - res.LeadingAtEnd)
	if res.Leading > 0 {
		res.Locker.HeapPerKey = (liveHeap() - heap1) / int64(res.Leading)
		res.Locker.RSSPerKey = (res.RSS - rss1) / int64(res.Leading)
	}
	if res.LeadingAtEnd > 0 {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		got, err := cli.Get(cctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		cancel()
		switch {
		case err != nil:
			fmt.Fprintf(os.Stderr, "bench: count of the held keys: %v\n", err)
			res.Unconfirmed = res.LeadingAtEnd
		case got.Count < int64(res.LeadingAtEnd):
			res.Unconfirmed = res.LeadingAtEnd - int(got.Count)
		}
	}

	stopStart := time.Now()
	var unlockErrs atomic.Int64
	next.Store(0)
	for range min(n, manyAcquirers) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if held[i] == nil {
					continue
				}
				uctx, cancel := context.WithTimeout(ctx, max(w.LeaseDuration, 30*time.Second))
				if held[i].Unlock(uctx) != nil {
					unlockErrs.Add(1)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	if err := sess.Close(); err != nil {
		unlockErrs.Add(1)
	}
	res.StopTook, res.StopFailures = time.Since(stopStart), int(unlockErrs.Load())
	b, err := json.Marshal(res)
	if err != nil {
		return w.Fail("%v", err)
	}
	proctest.WriteStdout(manyPrefix + string(b))
	return proctest.ExitOK
}
