package campaign

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/leasehold/leasehold/internal/proctest"
)

// proc is one worker process, and what the driver knows of it.
type proc struct {
	*proctest.Proc
	slot *slot

	// Set by the driver from the worker's lines and its exit.
	ready     bool
	readyAt   int64  // by its ready line
	attempts  string // "ok" or "fail" after the first attempt
	paused    bool   // SIGSTOPped and not yet SIGCONTinued
	signalled bool   // the runner sent it SIGKILL or SIGTERM: its exit is expected
	stopped   *proctest.Line
	exited    bool
	err       error

	watchControl string        // the control file of its watch faults
	watch        WatchFault    // the watch fault in force, by its last watch line
	watchAt      int64         // when that line says it came into force
	watchAcks    int           // watch lines so far
	clock        time.Duration // the wall-clock offset in force, by its last clock line
	clockAt      int64         // when that line says it came into force
	clockAcks    int           // clock lines so far
	failing      bool          // its health check fails, by its last health line (Ranked)
	healthAt     int64         // when that line says it came into force
	healthAcks   int           // health lines so far
}

// slot is one of the K places an instance runs in: a worker killed or stopped is replaced in
// its slot by a new one (a new instance ID). Each slot has its own proxy to the backend, so a
// partition cuts the instance of that slot only. The timeline has one row per slot.
type slot struct {
	n     int
	gen   int
	url   string
	env   []string // what the instance needs beside its URL to reach the store (Server.Via)
	proxy proxy    // nil for a backend without a network
	// members are the slot's proxies to each member of a cluster backend, in the order of
	// Cluster.Members; proxy is then all of them.
	members proxyGroup
	cur     *proc
}

// proxy is what the campaign needs of internal/tcpproxy.
type proxy interface {
	Addr() string
	Cut()
	Heal()
	Reset()
	Latency(time.Duration)
	Close() error
}

// message is a line a worker wrote on stdout, or its exit.
type message struct {
	p    *proc
	line string
	exit bool
	err  error // the exit's
}

// startProc starts a worker for slot s. Its stdout lines and then its exit arrive in the
// inbox.
func (d *driver) startProc(s *slot) (*proc, error) {
	s.gen++
	id := fmt.Sprintf("w%d.%d", s.n, s.gen)
	p := &proc{slot: s, watchControl: filepath.Join(d.dir, "watch-"+id), watch: WatchFault{Mode: WatchPass}}
	env := []string{envResource + "=" + d.res.addr(), envWatchControl + "=" + p.watchControl, envTrace + "=" + d.dir, raceEnv(d.dir)}
	env = append(env, s.env...)
	if d.o.Locker {
		env = append(env, envLocker+"=1")
	}
	if d.o.Ranked {
		env = append(env, rankedEnv(d.o, s.n)...)
	}
	if d.o.Partitions > 0 {
		env = append(env, envPartitions+"="+strconv.Itoa(d.o.Partitions), envPartsDir+"="+d.dir)
	}
	var err error
	p.Proc, err = proctest.Start(proctest.Spec{
		Config: proctest.Config{
			ID: id, URL: s.url, Lease: d.lease,
			LeaseDuration: d.o.LeaseDuration, RenewInterval: d.o.RenewInterval, Log: d.logPath,
		},
		Path: d.exe,
		Args: d.o.WorkerArgs,
		Env:  env,
		Line: func(line string) { d.inbox.Put(message{p: p, line: line}) },
		Exit: func(err error) { d.inbox.Put(message{p: p, exit: true, err: err}) },
	})
	if err != nil {
		return nil, err
	}
	d.procs = append(d.procs, p)
	s.cur = p
	return p, nil
}
