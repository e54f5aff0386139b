package campaign

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/internal/proctest"
	"github.com/leasehold/leasehold/internal/storecluster"
	"github.com/leasehold/leasehold/internal/tcpproxy"
)

// ClusterBackend starts a store as a cluster of server processes for one campaign, with its
// data under dir (the campaign's temporary directory). A storecluster.ErrUnavailable error
// means the servers cannot run here: the CI mode skips the backend unless servers are required.
type ClusterBackend func(ctx context.Context, dir string) (storecluster.Cluster, error)

var (
	clusterNames []string // the cluster backends' names, as registered
)

// RegisterClusterBackend makes a store cluster available under name, as a backend whose
// campaign adds the members' faults (kills, pauses and cuts of one member, failovers, restarts
// of the whole cluster) to the instances'. It panics on a duplicate name.
func RegisterClusterBackend(name string, start ClusterBackend) {
	RegisterBackend(name, func(ctx context.Context, dir string) (Server, error) {
		c, err := start(ctx, dir)
		if errors.Is(err, storecluster.ErrUnavailable) {
			return Server{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		if err != nil {
			return Server{}, err
		}
		d, ok := c.(storecluster.Direct)
		return Server{URL: c.URL(nil, nil), Cluster: c, Direct: ok && d.Direct(), Close: c.Close}, nil
	})
	backendsMu.Lock()
	defer backendsMu.Unlock()
	clusterNames = append(clusterNames, name)
}

// ClusterBackends returns the names of the cluster backends, sorted.
func ClusterBackends() []string {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	names := slices.Clone(clusterNames)
	slices.Sort(names)
	return names
}

// IsClusterBackend reports whether name was registered by RegisterClusterBackend.
func IsClusterBackend(name string) bool { return slices.Contains(ClusterBackends(), name) }

func init() {
	RegisterClusterBackend("etcd-cluster", func(ctx context.Context, dir string) (storecluster.Cluster, error) {
		return startEtcdCluster(ctx, dir, 3)
	})
	RegisterClusterBackend("nats-cluster", func(ctx context.Context, dir string) (storecluster.Cluster, error) {
		return storecluster.StartNATS(ctx, dir, 3) // a bucket with three replicas
	})
	RegisterClusterBackend("postgres-cluster", storecluster.StartPostgres) // a primary and a streaming standby
	// A primary, a replica, three Sentinels; every write waits for the replica (the README's
	// advice for Sentinel failovers), so that a failover does not lose a takeover it acknowledged.
	RegisterClusterBackend("redis-sentinel", func(ctx context.Context, dir string) (storecluster.Cluster, error) {
		c, err := storecluster.StartRedis(ctx, dir)
		if err != nil {
			return nil, err
		}
		return redisWaiting{c.(*storecluster.RedisCluster)}, nil
	})
}

// redisWaiting is the Redis cluster whose URL asks each write to wait for one replica.
type redisWaiting struct{ *storecluster.RedisCluster }

func (r redisWaiting) URL(addrs []string, params map[string]string) string {
	p := map[string]string{"wait_replicas": "1", "wait_timeout": "100ms"}
	for k, v := range params {
		p[k] = v
	}
	return r.RedisCluster.URL(addrs, p)
}

// ClusterInfo describes the cluster of a campaign in its report.
type ClusterInfo struct {
	Backend string   `json:"backend"` // the store's URL scheme
	Members []string `json:"members"`
	// NoFailover lists the failover kinds the cluster does not support (not injected).
	NoFailover []Kind `json:"no_failover,omitempty"`
	// ManualFailover: the cluster does not fail over by itself (PostgreSQL): after a kill or
	// pause of its primary it has none until that member runs again or a failover fault
	// promotes the standby.
	ManualFailover bool `json:"manual_failover,omitempty"`
}

func (d *driver) clusterInfo() *ClusterInfo {
	c := d.srv.Cluster
	info := &ClusterInfo{Backend: c.Backend()}
	if m, ok := c.(storecluster.Manual); ok {
		info.ManualFailover = m.ManualFailover()
	}
	for _, m := range c.Members() {
		info.Members = append(info.Members, m.Name)
	}
	for _, k := range []Kind{MemberFailover, MemberFailoverLossy} {
		if d.unsupported[k] {
			info.NoFailover = append(info.NoFailover, k)
		}
	}
	return info
}

// memberProxy is an instance's proxy to one member; it counts the bytes the instance sends
// through it, to tell which member the instance talks to.
type memberProxy struct {
	*tcpproxy.Proxy
	sent atomic.Int64
}

// proxyGroup is an instance's proxies to every member: the instance's own faults (latency,
// resets, partitions, outages) hit its connections to all of them at once.
type proxyGroup []*memberProxy

func (g proxyGroup) Addr() string { return "" }
func (g proxyGroup) Cut() {
	for _, p := range g {
		p.Cut()
	}
}
func (g proxyGroup) Heal() {
	for _, p := range g {
		p.Heal()
	}
}
func (g proxyGroup) Reset() {
	for _, p := range g {
		p.Reset()
	}
}
func (g proxyGroup) Latency(l time.Duration) {
	for _, p := range g {
		p.Latency(l)
	}
}
func (g proxyGroup) Close() error {
	var errs []error
	for _, p := range g {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}

// clusterProxies gives slot s a proxy to each member and the URL naming them.
func (d *driver) clusterProxies(s *slot) error {
	var g proxyGroup
	var addrs []string
	for _, m := range d.srv.Cluster.Members() {
		p, err := tcpproxy.New(m.Addr)
		if err != nil {
			return fmt.Errorf("campaign: proxy of instance %d to %s: %w", s.n, m.Name, err)
		}
		mp := &memberProxy{Proxy: p}
		p.Inspect(func(_ int, b []byte) { mp.sent.Add(int64(len(b))) })
		g = append(g, mp)
		s.proxy = g
		addrs = append(addrs, p.Addr())
	}
	s.members = g
	s.url = d.srv.Cluster.URL(addrs, nil)
	return nil
}

// errGiveUp: the fault found no target, or the cluster cannot do it; nothing was injected.
var errGiveUp = errors.New("campaign: fault given up")

// do runs fn, which may block (a member starting, a cluster restarting), on a goroutine of its
// own while the driver goes on handling the workers' lines and its timers; fn's context ends
// after timeout.
func (d *driver) do(what string, timeout time.Duration, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(d.ctx, timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- fn(ctx)
		d.inbox.Put(message{}) // wake the wait
	}()
	var err error
	finished := false
	werr := d.wait(what, timeout+10*time.Second, func() bool {
		select {
		case err = <-done:
			finished = true
		default:
		}
		return finished
	})
	if !finished {
		cancel()
		err = <-done
	}
	if werr != nil {
		return werr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// clusterLeader returns the cluster's leader member.
func (d *driver) clusterLeader() (*storecluster.Member, error) {
	var m *storecluster.Member
	err := d.do("a leader of the cluster", settleTimeout, func(ctx context.Context) error {
		var err error
		m, err = d.srv.Cluster.Leader(ctx)
		return err
	})
	return m, err
}

// busiestMember returns the member the leading instance sent the most bytes to over its next
// two renewals, or nil without a leader.
func (d *driver) busiestMember() (*storecluster.Member, string, error) {
	p := d.leaderProc()
	if p == nil {
		return nil, "", nil
	}
	before := make([]int64, len(p.slot.members))
	for i, mp := range p.slot.members {
		before[i] = mp.sent.Load()
	}
	n := d.renews[p.ID]
	if err := d.wait("two renewals by "+p.ID, 4*d.o.LeaseDuration, func() bool { return d.renews[p.ID] >= n+2 || d.leader != p.ID }); err != nil {
		return nil, "", err
	}
	best, most := -1, int64(0)
	for i, mp := range p.slot.members {
		if sent := mp.sent.Load() - before[i]; sent > most {
			best, most = i, sent
		}
	}
	if best < 0 {
		return nil, "", nil
	}
	return d.srv.Cluster.Members()[best], p.ID, nil
}

// memberFault injects a fault of a member (f.Kind), lifts it, and waits for the cluster to
// answer again (f.StoreBack). Its takeover is measured afterwards, from the leadership lines
// (see clusterTakeovers).
func (d *driver) memberFault(f *Fault) error {
	c := d.srv.Cluster
	members := c.Members()
	var m *storecluster.Member
	var err error
	switch f.Kind {
	case MemberKillLeader, MemberPauseLeader:
		if m, err = d.clusterLeader(); err != nil {
			return err
		}
	case MemberKillFollower, MemberPauseFollower:
		leader, err := d.clusterLeader()
		if err != nil {
			return err
		}
		var others []*storecluster.Member
		for _, x := range members {
			if x != leader && x.Running() && !x.Paused() {
				others = append(others, x)
			}
		}
		if len(others) == 0 {
			return errGiveUp
		}
		m = others[d.rng.IntN(len(others))]
	case MemberKillUsed:
		if m, f.Via, err = d.busiestMember(); err != nil {
			return err
		}
		if m == nil {
			return errGiveUp
		}
	case MemberCut:
		m = members[d.rng.IntN(len(members))]
	}
	if m != nil {
		f.Target = m.Name
	}
	// Down long enough for the members to elect without it and for the instances to notice,
	// not always longer than L.
	down := 300*time.Millisecond + time.Duration(d.rng.Int64N(int64(2*time.Second)))
	switch f.Kind {
	case MemberKillLeader, MemberKillFollower, MemberKillUsed:
		f.Param = down
		f.Start = proctest.Now()
		if err := m.Kill(); err != nil {
			return err
		}
		if err := d.sleep(down); err != nil {
			return err
		}
		restart := m.Start
		if r, ok := c.(storecluster.Rejoiner); ok {
			restart = func(ctx context.Context) error { return r.Rejoin(ctx, m) }
		}
		if err := d.do("restart of "+m.Name, recoverTimeout, restart); err != nil {
			return d.unrecovered(f, err)
		}
	case MemberPauseLeader, MemberPauseFollower:
		f.Param = down
		f.Start = proctest.Now()
		if err := m.Pause(); err != nil {
			return err
		}
		if err := d.sleep(down); err != nil {
			_ = m.Resume()
			return err
		}
		if err := m.Resume(); err != nil {
			return err
		}
	case MemberCut:
		f.Param = down
		f.Start = proctest.Now()
		i := slices.Index(members, m)
		for _, s := range d.slots {
			s.members[i].Cut()
		}
		err := d.sleep(down)
		for _, s := range d.slots {
			s.members[i].Heal()
		}
		if err != nil {
			return err
		}
	case MemberFailover, MemberFailoverLossy:
		old, err := d.clusterLeader()
		if err != nil {
			return err
		}
		f.Start = proctest.Now()
		f.Target = old.Name
		err = d.do("failover of the cluster", recoverTimeout, func(ctx context.Context) error {
			return c.Failover(ctx, f.Kind == MemberFailoverLossy)
		})
		if errors.Is(err, storecluster.ErrNoFailover) {
			d.unsupported[f.Kind] = true
			d.o.Logf("campaign %s: %s not injected: %v", d.o.Backend, f.Kind, err)
			return errGiveUp
		}
		if err != nil {
			return d.unrecovered(f, err)
		}
	case ClusterRestart:
		f.Start = proctest.Now()
		if err := d.do("restart of the cluster", restartTimeout, c.Restart); err != nil {
			return d.unrecovered(f, err)
		}
	}
	f.End = proctest.Now()
	if err := d.storeBack(f); err != nil {
		return d.unrecovered(f, err)
	}
	d.o.Logf("campaign %s: %s of %s: store answered %v after the fault began", d.o.Backend, f.Kind, f.Target,
		time.Duration(f.StoreBack-f.Start).Round(time.Millisecond))
	d.startStalls(f)
	return d.rebuild(f)
}

// Bounds of the campaign's waits for a cluster: not rules of the election, limits past which
// the cluster is taken for broken and started again (Fault.Unrecovered).
const (
	recoverTimeout = 30 * time.Second // a member's restart, a failover, a leader after a fault
	restartTimeout = 2 * time.Minute  // every member stopped and started again
)

// storeBack waits for the cluster to answer again once f is lifted, and sets f.StoreBack. A
// cluster with a Settler is back once it has settled; any other once it has a leader.
func (d *driver) storeBack(f *Fault) error {
	c := d.srv.Cluster
	if s, ok := c.(storecluster.Settler); ok {
		if err := d.do("the cluster settling", recoverTimeout, s.Settle); err != nil {
			return err
		}
	} else if _, err := d.clusterLeader(); err != nil {
		return err
	}
	f.StoreBack = proctest.Now()
	return nil
}

// rebuild starts again, through the cluster's Rejoiner, a member a failover left stopped (a
// former PostgreSQL primary), so that the next faults find the cluster whole. It runs after
// StoreBack: the clients do not wait for it, and nothing of it is timed.
func (d *driver) rebuild(f *Fault) error {
	r, ok := d.srv.Cluster.(storecluster.Rejoiner)
	if !ok {
		return nil
	}
	for _, m := range d.srv.Cluster.Members() {
		if m.Running() {
			continue
		}
		if err := d.do("rebuild of "+m.Name, recoverTimeout, func(ctx context.Context) error { return r.Rejoin(ctx, m) }); err != nil {
			return d.unrecovered(f, err)
		}
	}
	return nil
}

// errEndRun ends the faults of a campaign that cannot go on; the reason is among the
// problems, and the campaign still writes its report.
var errEndRun = errors.New("campaign: the run cannot go on")

// unrecovered records that the cluster did not recover from f (cause: what did not finish in
// time) and restarts the whole cluster so that the campaign goes on. Such a fault is its own
// outcome, not a broken bound: the store itself did not come back. When the restart does not
// bring the cluster back either, the run ends with its report (errEndRun).
func (d *driver) unrecovered(f *Fault, cause error) error {
	if err := d.ctx.Err(); err != nil {
		return err
	}
	if f.Start == 0 {
		return cause // nothing was injected yet
	}
	f.Unrecovered, f.UnrecoveredWhy = true, cause.Error()
	if f.End == 0 {
		f.End = proctest.Now()
	}
	f.StoreBack = 0
	d.o.Logf("campaign %s: fault %d (%s of %s): the cluster did not recover (%v); restarting it", d.o.Backend, f.N, f.Kind, f.Target, cause)
	c := d.srv.Cluster
	for _, m := range c.Members() {
		if m.Paused() {
			_ = m.Resume()
		}
	}
	if err := d.do("restart of the cluster", restartTimeout, c.Restart); err != nil {
		return d.endRun("fault %d (%s): the cluster did not recover (%v), nor after a restart of every member: %v", f.N, f.Kind, cause, err)
	}
	if err := d.storeBack(f); err != nil {
		return d.endRun("fault %d (%s): the cluster did not recover (%v), nor after a restart of every member: %v", f.N, f.Kind, cause, err)
	}
	f.Restarted = true
	return nil
}

// endRun records a problem and ends the run with its report.
func (d *driver) endRun(format string, args ...any) error {
	if err := d.ctx.Err(); err != nil {
		return err
	}
	d.problem(format, args...)
	return errEndRun
}

// clusterBound is the bound on the time without a leader after the store answers again once a
// member's fault is lifted: L + R (E6: a follower that saw the leader's record unchanged for L
// takes over at its next attempt; the leader itself renews at its next one) plus the slack.
// A restart of the whole cluster is not bounded, as an outage is not: every connection is
// gone, and the clients' reconnection schedules are part of the time.
func clusterBound(o Options, k Kind) time.Duration {
	if k == ClusterRestart {
		return 0
	}
	return o.LeaseDuration + o.RenewInterval + o.Slack
}

// startEtcdCluster starts 3 etcd member processes; without an etcd binary, it builds one from
// the etcd module this module requires, once, into the user's cache (buildEtcd).
func startEtcdCluster(ctx context.Context, dir string, n int) (storecluster.Cluster, error) {
	if _, err := storecluster.EtcdBinary(); errors.Is(err, storecluster.ErrUnavailable) {
		if berr := buildEtcd(ctx); berr != nil {
			return nil, fmt.Errorf("%w (and building it: %v)", err, berr)
		}
	}
	return storecluster.StartEtcd(ctx, dir, n)
}
