//go:build unix

package storecluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RedisMasterName is the name the Sentinels of StartRedis know the primary by (the master
// parameter of the store URL).
const RedisMasterName = "leasehold"

// Sentinel timing: short, so that a test sees a failover within a second or two. A primary
// that answers nothing for down-after is down for a Sentinel; a failover that has not
// completed within failover-timeout is tried again.
const (
	redisDownAfter       = 500 * time.Millisecond
	redisFailoverTimeout = 3 * time.Second

	// redisLossWindow is how long Failover(true) keeps the replica stopped while the primary
	// acknowledges writes: several renew intervals of the tests' elections. (The primary's
	// replication offset would not tell that a client wrote: the Sentinels' hello messages,
	// published every 2 s, move it too.)
	redisLossWindow = time.Second
)

// RedisCluster is Redis with one replica behind three Sentinels, on loopback. The servers and
// Sentinels announce their own addresses (no replica-announce-ip/port, no Sentinel announce-ip):
// a client reaches the data servers at the addresses the Sentinels give, so a test cannot put a
// proxy in front of a member (URL refuses addrs); it faults the processes instead.
var _ Direct = (*RedisCluster)(nil)

// Direct reports true: clients reach the servers the Sentinels name, not proxies.
func (c *RedisCluster) Direct() bool { return true }

type RedisCluster struct {
	dir       string
	members   []*Member // primary first, then the replica, as started
	sentinels []*Member

	// AfterReplicaStopped, when set, is called by Failover(true) once the replica is stopped
	// and cut from the primary, before the 1 s during which the primary goes on alone: what a
	// test writes then is acknowledged and lost.
	AfterReplicaStopped func()

	mu sync.Mutex // one fault at a time
}

var _ Cluster = (*RedisCluster)(nil)

// StartRedis starts, in dir, a Redis primary, one replica and three Sentinels monitoring them
// (quorum 2), each on a free loopback port, and returns once the Sentinels see the replica.
// The binary is redis-server (LEASEHOLD_REDIS_SERVER_BIN, or on PATH); missing, an error
// wrapping ErrUnavailable.
func StartRedis(ctx context.Context, dir string) (Cluster, error) { return startRedis(ctx, dir) }

func startRedis(ctx context.Context, dir string) (_ *RedisCluster, err error) {
	bin, err := LookBinary("LEASEHOLD_REDIS_SERVER_BIN", "redis-server")
	if err != nil {
		return nil, err
	}
	c := &RedisCluster{dir: dir}
	defer func() {
		if err != nil {
			c.Close() // the servers started so far
		}
	}()
	var primaryAddr string
	for i, name := range []string{"redis-1", "redis-2"} {
		addr, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		if i == 0 {
			primaryAddr = addr
		}
		conf := filepath.Join(dir, name+".conf")
		data := filepath.Join(dir, name)
		if err := os.MkdirAll(data, 0o755); err != nil {
			return nil, err
		}
		_, port, _ := net.SplitHostPort(addr)
		lines := []string{
			"port " + port,
			"bind 127.0.0.1",
			"protected-mode no",
			"dir " + data,
			"logfile " + filepath.Join(dir, name+".log"),
			"appendonly yes",
			`save ""`,
			"repl-diskless-sync yes",
			"repl-diskless-sync-delay 0",
		}
		if i > 0 {
			h, p, _ := net.SplitHostPort(primaryAddr)
			lines = append(lines, "replicaof "+h+" "+p)
		}
		if err := writeConf(conf, lines); err != nil {
			return nil, err
		}
		c.members = append(c.members, &Member{
			Name:    name,
			Addr:    addr,
			Command: func() *exec.Cmd { return exec.Command(bin, conf) },
			Ready:   func(ctx context.Context) error { return respPing(ctx, addr) },
		})
	}
	for i := range 3 {
		addr, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("sentinel-%d", i+1)
		conf := filepath.Join(dir, name+".conf")
		_, port, _ := net.SplitHostPort(addr)
		h, p, _ := net.SplitHostPort(primaryAddr)
		m := RedisMasterName
		if err := writeConf(conf, []string{
			"port " + port,
			"bind 127.0.0.1",
			"protected-mode no",
			"dir " + dir,
			"logfile " + filepath.Join(dir, name+".log"),
			fmt.Sprintf("sentinel monitor %s %s %s 2", m, h, p),
			fmt.Sprintf("sentinel down-after-milliseconds %s %d", m, redisDownAfter.Milliseconds()),
			fmt.Sprintf("sentinel failover-timeout %s %d", m, redisFailoverTimeout.Milliseconds()),
			fmt.Sprintf("sentinel parallel-syncs %s 1", m),
		}); err != nil {
			return nil, err
		}
		c.sentinels = append(c.sentinels, &Member{
			Name:    name,
			Addr:    addr,
			Command: func() *exec.Cmd { return exec.Command(bin, conf, "--sentinel") },
			Ready:   func(ctx context.Context) error { return respPing(ctx, addr) },
		})
	}
	if err := c.startAll(ctx); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return c, nil
}

// startAll starts the data servers, then the Sentinels, and waits until the primary has its
// replica in sync and every Sentinel knows the replica.
func (c *RedisCluster) startAll(ctx context.Context) error {
	for _, m := range slices.Concat(c.members, c.sentinels) {
		if err := m.Start(ctx); err != nil {
			return err
		}
	}
	return c.waitWhole(ctx)
}

// WaitReady waits until the replica is in sync with the primary and every Sentinel lists it as
// a good replica: then a failover, requested or after the primary's death, can promote it. A
// Sentinel learns of a new replica from the primary's INFO, which it reads every 10 s: after a
// Failover, up to that long.
func (c *RedisCluster) WaitReady(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waitWhole(ctx)
}

func writeConf(path string, lines []string) error {
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

func respPing(ctx context.Context, addr string) error {
	v, err := respDo(ctx, addr, "PING")
	if err != nil {
		return err
	}
	if v != "PONG" {
		return fmt.Errorf("PING answered %v", v)
	}
	return nil
}

// Backend implements Cluster.
func (c *RedisCluster) Backend() string { return "redis" }

// Members implements Cluster: the two data servers.
func (c *RedisCluster) Members() []*Member { return slices.Clone(c.members) }

// Sentinels returns the Sentinel processes (not faulted by the shared tests).
func (c *RedisCluster) Sentinels() []*Member { return slices.Clone(c.sentinels) }

// URL implements Cluster: redis+sentinel:// naming the three Sentinels, database 0, master
// RedisMasterName. The client learns the data servers' addresses from the Sentinels, so addrs
// must be nil (see RedisCluster).
func (c *RedisCluster) URL(addrs []string, params map[string]string) string {
	if addrs != nil {
		panic("storecluster: the Redis cluster's clients reach the data servers at the addresses the Sentinels announce; it cannot be proxied")
	}
	var hosts []string
	for _, s := range c.sentinels {
		hosts = append(hosts, s.Addr)
	}
	q := url.Values{"master": {RedisMasterName}}
	for k, v := range params {
		q.Set(k, v)
	}
	u := url.URL{Scheme: "redis+sentinel", Host: strings.Join(hosts, ","), Path: "/0", RawQuery: q.Encode()}
	return u.String()
}

// Leader implements Cluster: the primary every running Sentinel names (at least two answering),
// SENTINEL get-master-addr-by-name. While they disagree, or name no member, it waits.
func (c *RedisCluster) Leader(ctx context.Context) (*Member, error) {
	var last error
	for {
		m, err := c.sentinelPrimary(ctx)
		if err == nil {
			return m, nil
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, c.withLogs(fmt.Errorf("storecluster: no primary agreed by the Sentinels: %w (last: %v)", ctx.Err(), last))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *RedisCluster) sentinelPrimary(ctx context.Context) (*Member, error) {
	var addr string
	answered := 0
	for _, s := range c.sentinels {
		if !s.Running() {
			continue
		}
		v, err := respDo(ctx, s.Addr, "SENTINEL", "get-master-addr-by-name", RedisMasterName)
		if err != nil {
			continue
		}
		hp, ok := v.([]any)
		if !ok || len(hp) != 2 {
			return nil, fmt.Errorf("%s answered %v", s.Name, v)
		}
		a := net.JoinHostPort(fmt.Sprint(hp[0]), fmt.Sprint(hp[1]))
		if addr != "" && a != addr {
			return nil, fmt.Errorf("the Sentinels disagree: %s and %s", addr, a)
		}
		addr = a
		answered++
	}
	if answered < 2 {
		return nil, fmt.Errorf("%d Sentinels answered", answered)
	}
	for _, m := range c.members {
		if m.Addr == addr {
			return m, nil
		}
	}
	return nil, fmt.Errorf("the Sentinels name %s, no member", addr)
}

// other returns the data server that is not m.
func (c *RedisCluster) other(m *Member) *Member {
	if c.members[0] == m {
		return c.members[1]
	}
	return c.members[0]
}

// Failover implements Cluster. Without loseWrites: writes are paused on the primary (CLIENT
// PAUSE WRITE), the replica catches up, the Sentinels fail over (SENTINEL FAILOVER), the old
// primary is made a replica of the new one, and its clients are let go (their writes then
// answer READONLY, or fail with their connections). With loseWrites: the replica is stopped
// (SIGSTOP), the primary acknowledges for 1 s the writes it cannot replicate, is killed (SIGKILL), the replica resumes and the
// Sentinels promote it without those writes; the old primary is then started again and made a
// replica of the new one, which drops what it alone had. Either way it returns once the new
// primary is named by the Sentinels, answers as a master, and has its replica in sync (the
// Sentinels may not know that replica yet: see WaitReady).
func (c *RedisCluster) Failover(ctx context.Context, loseWrites bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, err := c.Leader(ctx)
	if err != nil {
		return err
	}
	next := c.other(old)
	if err := c.rejoinStale(ctx, next, old); err != nil {
		return err
	}
	if loseWrites {
		err = c.failoverLosing(ctx, old, next)
	} else {
		err = c.failoverClean(ctx, old, next)
	}
	if err != nil {
		return err
	}
	return c.waitReplica(ctx, next, old, false)
}

func (c *RedisCluster) failoverClean(ctx context.Context, old, next *Member) error {
	if err := c.waitReplica(ctx, old, next, true); err != nil {
		return err
	}
	if _, err := respDo(ctx, old.Addr, "CLIENT", "PAUSE", "60000", "WRITE"); err != nil {
		return fmt.Errorf("storecluster: pause writes on %s: %w", old.Name, err)
	}
	defer respDo(context.WithoutCancel(ctx), old.Addr, "CLIENT", "UNPAUSE")
	if err := c.waitCaughtUp(ctx, old, next); err != nil {
		return err
	}
	if err := c.sentinelFailover(ctx); err != nil {
		return err
	}
	if err := c.waitPromoted(ctx, next); err != nil {
		return err
	}
	return c.demote(ctx, old, next)
}

func (c *RedisCluster) failoverLosing(ctx context.Context, old, next *Member) error {
	if err := c.waitReplica(ctx, old, next, true); err != nil {
		return err
	}
	// Stopped, the replica would still find in its socket's buffer what the primary sent
	// meanwhile: the primary also drops its connection, so that it sends nothing more.
	if err := next.Pause(); err != nil {
		return err
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = next.Resume()
		}
	}()
	if _, err := respDo(ctx, old.Addr, "CLIENT", "KILL", "TYPE", "replica"); err != nil {
		return fmt.Errorf("storecluster: drop the replica's connection on %s: %w", old.Name, err)
	}
	if c.AfterReplicaStopped != nil {
		c.AfterReplicaStopped()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(redisLossWindow):
	}
	if err := old.Kill(); err != nil {
		return err
	}
	resumed = true
	if err := next.Resume(); err != nil {
		return err
	}
	if err := c.waitPromoted(ctx, next); err != nil {
		return err
	}
	if err := old.Start(ctx); err != nil {
		return err
	}
	return c.demote(ctx, old, next)
}

// WaitPromoted returns when the Sentinels name another primary than old, and it answers as
// a master: the moment from which a client can find it.
func (c *RedisCluster) WaitPromoted(ctx context.Context, old *Member) (*Member, error) {
	next := c.other(old)
	return next, c.waitPromoted(ctx, next)
}

// sentinelFailover asks a Sentinel to fail over, again while it answers that it cannot yet
// (a failover in progress, a replica not yet seen as good).
func (c *RedisCluster) sentinelFailover(ctx context.Context) error {
	for {
		var last error
		for _, s := range c.sentinels {
			_, err := respDo(ctx, s.Addr, "SENTINEL", "FAILOVER", RedisMasterName)
			if err == nil {
				return nil
			}
			last = err
		}
		select {
		case <-ctx.Done():
			return c.withLogs(fmt.Errorf("storecluster: SENTINEL FAILOVER: %w (last: %v)", ctx.Err(), last))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitPromoted waits until the Sentinels name m and m answers as a master.
func (c *RedisCluster) waitPromoted(ctx context.Context, m *Member) error {
	for {
		p, err := c.Leader(ctx)
		if err != nil {
			return err
		}
		if p == m {
			if role, err := respRole(ctx, m.Addr); err == nil && role == "master" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return c.withLogs(fmt.Errorf("storecluster: %s not promoted: %w", m.Name, ctx.Err()))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// demote makes old a replica of primary at once, as the Sentinels would at their next look at
// it: REPLICAOF, CONFIG REWRITE, and the connections of its clients closed (normal and
// Pub/Sub), so that they connect again and find the primary.
func (c *RedisCluster) demote(ctx context.Context, old, primary *Member) error {
	h, p, _ := net.SplitHostPort(primary.Addr)
	for _, cmd := range [][]string{
		{"REPLICAOF", h, p},
		{"CONFIG", "REWRITE"},
		{"CLIENT", "KILL", "TYPE", "normal"},
		{"CLIENT", "KILL", "TYPE", "pubsub"},
	} {
		if _, err := respDo(ctx, old.Addr, cmd...); err != nil {
			return fmt.Errorf("storecluster: %s on %s: %w", strings.Join(cmd, " "), old.Name, err)
		}
	}
	return nil
}

// rejoinStale makes stale a replica of primary when it still answers as a master: a primary
// paused or killed while the Sentinels failed over comes back as one, and the Sentinels may
// take long to convert it.
func (c *RedisCluster) rejoinStale(ctx context.Context, stale, primary *Member) error {
	info, err := respInfo(ctx, stale.Addr, "replication")
	if err != nil || info["role"] != "master" {
		return nil // not answering: waiting for it says so
	}
	return c.demote(ctx, stale, primary)
}

var _ Settler = (*RedisCluster)(nil)

// redisSettlePoll is the time between the polls of Settle, and redisSettleStable how long what
// it waits for must hold: longer than a Sentinel takes to find a primary down (down-after) and
// agree with another to fail over, so that a failover decided while a primary was gone shows
// before Settle returns.
const (
	redisSettlePoll   = 100 * time.Millisecond
	redisSettleStable = 2*redisDownAfter + 500*time.Millisecond
)

// Settle implements Settler. Leader names a primary as soon as the Sentinels agree, which they
// may do while one of them is about to fail over (a primary paused for longer than down-after
// and just resumed) or while the former primary still acts as a master: a client timed from
// then is timed across that failover. Settle returns once, on every poll for
// redisSettleStable, every Sentinel names the same primary with no failover under way and no
// down flag, that primary accepts a SET, and the other server replicates from it with its link
// up. A former primary still acting as a master is made a replica of the named one on the way.
func (c *RedisCluster) Settle(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var (
		prev  *Member
		since time.Time // of the first poll that found prev settled
	)
	for {
		p, err := c.settled(ctx)
		switch {
		case err != nil:
			prev = nil
		case p != prev:
			prev, since = p, time.Now()
		case time.Since(since) >= redisSettleStable:
			return nil
		}
		select {
		case <-ctx.Done():
			return c.withLogs(fmt.Errorf("storecluster: the Redis cluster did not settle: %w (last: %v)", ctx.Err(), err))
		case <-time.After(redisSettlePoll):
		}
	}
}

// settled checks once what Settle waits for, and returns the primary when it holds.
func (c *RedisCluster) settled(ctx context.Context) (*Member, error) {
	var addr string
	for _, s := range c.sentinels {
		v, err := respDo(ctx, s.Addr, "SENTINEL", "MASTER", RedisMasterName)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		f := pairs(v)
		a := net.JoinHostPort(f["ip"], f["port"])
		switch {
		case addr != "" && a != addr:
			return nil, fmt.Errorf("the Sentinels disagree: %s and %s", addr, a)
		case strings.Contains(f["flags"], "failover") || strings.Contains(f["flags"], "down"):
			return nil, fmt.Errorf("%s: the primary %s is flagged %s", s.Name, a, f["flags"])
		}
		addr = a
	}
	var p *Member
	for _, m := range c.members {
		if m.Addr == addr {
			p = m
		}
	}
	if p == nil {
		return nil, fmt.Errorf("the Sentinels name %s, no member", addr)
	}
	if _, err := respDo(ctx, p.Addr, "SET", "storecluster:settle", "1"); err != nil {
		return nil, fmt.Errorf("%s does not accept a write: %w", p.Name, err)
	}
	other := c.other(p)
	info, err := respInfo(ctx, other.Addr, "replication")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", other.Name, err)
	}
	if info["role"] == "master" {
		if err := c.demote(ctx, other, p); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s still acted as a master: made a replica of %s", other.Name, p.Name)
	}
	if err := c.replicaOK(ctx, p, other, false); err != nil {
		return nil, err
	}
	return p, nil
}

var _ Rejoiner = (*RedisCluster)(nil)

// Rejoin starts m, a data server that was killed, and makes it a replica of the primary (it
// would come back as the primary it was, with the data it alone had, until the Sentinels
// turned it into a replica), and waits until it is in sync and every Sentinel counts on it;
// should the Sentinels fail over meanwhile (promoting m, say), until the other server is in
// sync with the primary they name then.
// When the Sentinels still name m the primary, m starts again as the primary.
func (c *RedisCluster) Rejoin(ctx context.Context, m *Member) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, err := c.Leader(ctx)
	if err != nil {
		return err
	}
	if p == m {
		// Still named the primary. A Sentinel that has found it down, or is about to, may be
		// failing over: started now, it would come back as a master the Sentinels then turn
		// into a replica, while its clients wrote to it, or be promoted by the failover's next
		// try. Wait for the failover to end: m is then a replica like any other.
		if p, err = c.failedOver(ctx, m); err != nil {
			return err
		}
		if p == m {
			return m.Start(ctx) // no Sentinel found it down: it comes back on its data, its replica follows
		}
	}
	if err := m.Start(ctx); err != nil {
		return err
	}
	if err := c.demote(ctx, m, p); err != nil {
		return err
	}
	return c.waitWhole(ctx)
}

// failedOver returns m, the primary the Sentinels name, when none of them flags it down or
// failing over on every poll for redisSettleStable, or else the primary they name once the
// failover has completed. A Sentinel flags a dead primary only once a ping has gone
// unanswered for down-after, so that none flagging it a moment after the kill says nothing:
// m started then would act as a master beside the replica the failover promotes, until the
// Sentinels convert it (once it has reported master for 8 s), and the primary they name would
// have no replica meanwhile.
func (c *RedisCluster) failedOver(ctx context.Context, m *Member) (*Member, error) {
	var unflagged time.Time // since when no poll found m flagged
	for {
		p, err := c.sentinelPrimary(ctx)
		if err == nil && p != m {
			return p, nil
		}
		if err == nil {
			flagged := false
			for _, s := range c.sentinels {
				if !s.Running() {
					continue
				}
				v, err := respDo(ctx, s.Addr, "SENTINEL", "MASTER", RedisMasterName)
				if err != nil {
					continue
				}
				f := pairs(v)["flags"]
				flagged = flagged || strings.Contains(f, "down") || strings.Contains(f, "failover")
			}
			switch {
			case flagged:
				unflagged = time.Time{}
			case unflagged.IsZero():
				unflagged = time.Now()
			case time.Since(unflagged) >= redisSettleStable:
				return m, nil
			}
		} else {
			unflagged = time.Time{}
		}
		select {
		case <-ctx.Done():
			return nil, c.withLogs(fmt.Errorf("storecluster: %s found down by the Sentinels, and no failover completed: %w", m.Name, ctx.Err()))
		case <-time.After(redisSettlePoll):
		}
	}
}

// waitWhole waits until the other data server replicates, in sync, from the primary the
// Sentinels name, and every Sentinel lists it as a good replica. The primary is asked again on
// every poll: the Sentinels may fail over meanwhile (a primary that a busy machine kept from
// answering their pings for down-after), promoting the very server that was waited for as a
// replica, which then never replicates from the former primary.
func (c *RedisCluster) waitWhole(ctx context.Context) error {
	for {
		p, err := c.sentinelPrimary(ctx)
		if err == nil {
			if err = c.replicaOK(ctx, p, c.other(p), true); err == nil {
				return nil
			}
			err = fmt.Errorf("the Sentinels name %s: %w", p.Name, err)
		}
		select {
		case <-ctx.Done():
			return c.withLogs(fmt.Errorf("storecluster: no primary with its replica in sync: %w (last: %v)", ctx.Err(), err))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitReplica waits until replica is replicating from primary with its link up and, with
// sentinels, every Sentinel lists it as a replica not down.
func (c *RedisCluster) waitReplica(ctx context.Context, primary, replica *Member, sentinels bool) error {
	for {
		err := c.replicaOK(ctx, primary, replica, sentinels)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return c.withLogs(fmt.Errorf("storecluster: %s not a replica of %s in sync: %w (last: %v)", replica.Name, primary.Name, ctx.Err(), err))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *RedisCluster) replicaOK(ctx context.Context, primary, replica *Member, sentinels bool) error {
	info, err := respInfo(ctx, replica.Addr, "replication")
	if err != nil {
		return err
	}
	if info["role"] != "slave" || net.JoinHostPort(info["master_host"], info["master_port"]) != primary.Addr ||
		info["master_link_status"] != "up" || info["master_sync_in_progress"] != "0" {
		return fmt.Errorf("%s: role %s of %s:%s, link %s", replica.Name, info["role"], info["master_host"], info["master_port"], info["master_link_status"])
	}
	if !sentinels {
		return nil
	}
	for _, s := range c.sentinels {
		v, err := respDo(ctx, s.Addr, "SENTINEL", "REPLICAS", RedisMasterName)
		if err != nil {
			return err
		}
		found := false
		for _, r := range asList(v) {
			f := pairs(r)
			if net.JoinHostPort(f["ip"], f["port"]) == replica.Addr && !strings.Contains(f["flags"], "down") &&
				!strings.Contains(f["flags"], "disconnected") && f["master-link-status"] == "ok" {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("%s does not list %s as a good replica", s.Name, replica.Name)
		}
	}
	return nil
}

// waitCaughtUp waits until replica has processed every byte primary's replication stream holds.
func (c *RedisCluster) waitCaughtUp(ctx context.Context, primary, replica *Member) error {
	for {
		want, err := replOffset(ctx, primary.Addr, "master_repl_offset")
		if err != nil {
			return err
		}
		got, err := replOffset(ctx, replica.Addr, "slave_repl_offset")
		if err == nil && got >= want {
			return nil
		}
		select {
		case <-ctx.Done():
			return c.withLogs(fmt.Errorf("storecluster: %s not caught up with %s: %w", replica.Name, primary.Name, ctx.Err()))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func replOffset(ctx context.Context, addr, field string) (int64, error) {
	info, err := respInfo(ctx, addr, "replication")
	if err != nil {
		return 0, err
	}
	v, ok := info[field]
	if !ok {
		return 0, fmt.Errorf("storecluster: %s has no %s", addr, field)
	}
	return strconv.ParseInt(v, 10, 64)
}

func respRole(ctx context.Context, addr string) (string, error) {
	v, err := respDo(ctx, addr, "ROLE")
	if err != nil {
		return "", err
	}
	l := asList(v)
	if len(l) == 0 {
		return "", fmt.Errorf("ROLE answered %v", v)
	}
	return fmt.Sprint(l[0]), nil
}

func asList(v any) []any { l, _ := v.([]any); return l }

// pairs turns a flat [k1 v1 k2 v2 ...] reply into a map.
func pairs(v any) map[string]string {
	l := asList(v)
	out := map[string]string{}
	for i := 0; i+1 < len(l); i += 2 {
		out[fmt.Sprint(l[i])] = fmt.Sprint(l[i+1])
	}
	return out
}

// Restart implements Cluster: the Sentinels stop first (so that none fails over a primary that
// is only restarting), then the data servers (SIGTERM: they write their append-only files);
// all start again, data servers first.
func (c *RedisCluster) Restart(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, m := range slices.Concat(c.sentinels, c.members) {
		errs = append(errs, m.Stop())
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return c.startAll(ctx)
}

// Close implements Cluster.
func (c *RedisCluster) Close() error {
	var errs []error
	for _, m := range slices.Concat(c.sentinels, c.members) {
		errs = append(errs, m.Kill())
	}
	return errors.Join(errs...)
}
