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

// redisClusterNodeTimeout is the cluster-node-timeout of StartRedisShards: a primary that
// answers nothing for that long is failed over by its replica, so a test sees a failover within
// two or three seconds.
const redisClusterNodeTimeout = time.Second

// RedisShards is a Redis Cluster on loopback: three shards, each a primary and one replica, on
// free ports. The nodes announce their own addresses (no cluster-announce-ip/port): a client
// reaches the nodes the cluster names, so a test cannot put a proxy in front of a member (URL
// refuses addrs); it faults the processes instead.
type RedisShards struct {
	dir      string
	members  []*Member // the primaries as started (shards 0, 1, 2), then their replicas in order
	busPorts []string  // each member's cluster bus port

	// Key is the Redis key whose slot's shard is the one Leader and Failover act on (a test
	// sets it to its record's key); empty, the shard of slot 0.
	Key string

	// AfterReplicaStopped, when set, is called by Failover(true) once the shard's replica is
	// stopped, before the time during which its primary goes on alone: what a test writes then
	// is acknowledged and lost.
	AfterReplicaStopped func()

	mu sync.Mutex // one fault at a time
}

var (
	_ Cluster  = (*RedisShards)(nil)
	_ Direct   = (*RedisShards)(nil)
	_ Rejoiner = (*RedisShards)(nil)
	_ Settler  = (*RedisShards)(nil)
)

// StartRedisShards starts, in dir, a Redis Cluster of three primaries and three replicas
// (redis-server --cluster-enabled yes), each on a free loopback port, joins them (CLUSTER MEET,
// ADDSLOTSRANGE, REPLICATE) and returns once every node reports the cluster ok and every
// replica is in sync. The binary is redis-server (LEASEHOLD_REDIS_SERVER_BIN, or on PATH), 7.0
// or later (sharded Pub/Sub); missing, or one that cannot run a cluster, an error wrapping
// ErrUnavailable.
func StartRedisShards(ctx context.Context, dir string) (_ *RedisShards, err error) {
	bin, err := LookBinary("LEASEHOLD_REDIS_SERVER_BIN", "redis-server")
	if err != nil {
		return nil, err
	}
	c := &RedisShards{dir: dir}
	defer func() {
		if err != nil {
			c.Close() // the nodes started so far
		}
	}()
	for i := range 6 {
		addr, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		// The cluster bus is on the port + 10000 unless told: above 55535 that is no port,
		// and below it may be taken. A free port of its own instead.
		bus, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		_, busPort, _ := net.SplitHostPort(bus)
		c.busPorts = append(c.busPorts, busPort)
		name := fmt.Sprintf("redis-shard-%d", i%3+1)
		if i >= 3 {
			name += "-replica"
		}
		conf := filepath.Join(dir, name+".conf")
		data := filepath.Join(dir, name)
		if err := os.MkdirAll(data, 0o755); err != nil {
			return nil, err
		}
		_, port, _ := net.SplitHostPort(addr)
		if err := writeConf(conf, []string{
			"port " + port,
			"bind 127.0.0.1",
			"protected-mode no",
			"dir " + data,
			"logfile " + filepath.Join(dir, name+".log"),
			"appendonly yes",
			`save ""`,
			"cluster-enabled yes",
			"cluster-config-file nodes.conf",
			"cluster-port " + busPort,
			fmt.Sprintf("cluster-node-timeout %d", redisClusterNodeTimeout.Milliseconds()),
			// A replica that was cut off for a while may still take over (the tests' faults
			// are short; the lost writes are the point of Failover(true)).
			"cluster-replica-validity-factor 0",
			// A shard without a primary stops its slots only, not the others'.
			"cluster-require-full-coverage no",
			"repl-diskless-sync yes",
			"repl-diskless-sync-delay 0",
		}); err != nil {
			return nil, err
		}
		c.members = append(c.members, &Member{
			Name:    name,
			Addr:    addr,
			Command: func() *exec.Cmd { return exec.Command(bin, conf) },
			Ready:   func(ctx context.Context) error { return respPing(ctx, addr) },
		})
	}
	if err := StartAll(ctx, c.members); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if err := c.join(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// join makes the six fresh nodes one cluster: three primaries with a third of the slots each,
// each with one replica.
func (c *RedisShards) join(ctx context.Context) error {
	ids := make([]string, len(c.members))
	for i, m := range c.members {
		id, err := respDo(ctx, m.Addr, "CLUSTER", "MYID")
		if err != nil {
			return fmt.Errorf("%w: %s: CLUSTER MYID: %v", ErrUnavailable, m.Name, err)
		}
		ids[i] = fmt.Sprint(id)
		// Distinct epochs, so that the nodes need not resolve a collision first.
		if _, err := respDo(ctx, m.Addr, "CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(i+1)); err != nil {
			return fmt.Errorf("storecluster: %s: CLUSTER SET-CONFIG-EPOCH: %w", m.Name, err)
		}
	}
	ranges := [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}
	for i, r := range ranges {
		if _, err := respDo(ctx, c.members[i].Addr, "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(r[0]), strconv.Itoa(r[1])); err != nil {
			return fmt.Errorf("storecluster: %s: CLUSTER ADDSLOTSRANGE: %w", c.members[i].Name, err)
		}
	}
	for i, m := range c.members[1:] {
		h, p, _ := net.SplitHostPort(m.Addr)
		if _, err := respDo(ctx, c.members[0].Addr, "CLUSTER", "MEET", h, p, c.busPorts[i+1]); err != nil {
			return fmt.Errorf("storecluster: CLUSTER MEET %s: %w", m.Name, err)
		}
	}
	// A node replicates only a primary it knows: wait until each replica knows its own.
	for i := 3; i < 6; i++ {
		err := c.poll(ctx, c.members[i].Name+" to know its primary", func() (bool, error) {
			nodes, err := clusterNodes(ctx, c.members[i].Addr)
			if err != nil {
				return false, nil
			}
			return slices.ContainsFunc(nodes, func(n clusterNode) bool { return n.id == ids[i-3] }), nil
		})
		if err != nil {
			return err
		}
		if _, err := respDo(ctx, c.members[i].Addr, "CLUSTER", "REPLICATE", ids[i-3]); err != nil {
			return fmt.Errorf("storecluster: %s: CLUSTER REPLICATE: %w", c.members[i].Name, err)
		}
	}
	return c.settle(ctx)
}

// clusterNode is a line of CLUSTER NODES.
type clusterNode struct {
	id, addr, primaryID string
	primary, failing    bool
	self                bool
	slots               [][2]int
}

func clusterNodes(ctx context.Context, addr string) ([]clusterNode, error) {
	v, err := respDo(ctx, addr, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	var out []clusterNode
	for _, line := range strings.Split(strings.TrimSpace(fmt.Sprint(v)), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		flags := strings.Split(f[2], ",")
		n := clusterNode{
			id:        f[0],
			addr:      strings.SplitN(strings.SplitN(f[1], "@", 2)[0], ",", 2)[0],
			primaryID: f[3],
			primary:   slices.Contains(flags, "master"),
			failing:   slices.Contains(flags, "fail") || slices.Contains(flags, "fail?"),
			self:      slices.Contains(flags, "myself"),
		}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				continue // a slot being migrated or imported
			}
			lo, hi, ok := strings.Cut(s, "-")
			if !ok {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 == nil && err2 == nil {
				n.slots = append(n.slots, [2]int{a, b})
			}
		}
		out = append(out, n)
	}
	return out, nil
}

func (c *RedisShards) poll(ctx context.Context, what string, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return c.withLogs(fmt.Errorf("storecluster: waiting for %s: %w", what, ctx.Err()))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// withLogs appends the tail of each node's log to err.
func (c *RedisShards) withLogs(err error) error {
	var b strings.Builder
	for _, m := range c.members {
		raw, _ := os.ReadFile(filepath.Join(c.dir, m.Name+".log"))
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		fmt.Fprintf(&b, "\n--- %s (last lines) ---\n%s", m.Name, strings.Join(lines[max(0, len(lines)-10):], "\n"))
	}
	return fmt.Errorf("%w%s", err, b.String())
}

// Backend implements Cluster.
func (c *RedisShards) Backend() string { return "redis" }

// Direct reports true: clients reach the nodes the cluster names, not proxies.
func (c *RedisShards) Direct() bool { return true }

// Members implements Cluster: the three primaries as started, then their replicas. After a
// failover a replica may be a primary: Leader and Primaries say which is which now.
func (c *RedisShards) Members() []*Member { return slices.Clone(c.members) }

// URL implements Cluster: redis+cluster:// naming every node as a startup node. The client learns the
// nodes' addresses from the cluster, so addrs must be nil.
func (c *RedisShards) URL(addrs []string, params map[string]string) string {
	if addrs != nil {
		panic("storecluster: the Redis Cluster's clients reach the nodes at the addresses they announce; it cannot be proxied")
	}
	var hosts []string
	for _, m := range c.members {
		hosts = append(hosts, m.Addr)
	}
	q := url.Values{}
	for k, v := range params {
		q.Set(k, v)
	}
	u := url.URL{Scheme: "redis+cluster", Host: strings.Join(hosts, ","), RawQuery: q.Encode()}
	return u.String()
}

// keySlot is the slot of c.Key (0 without one), as a running node computes it.
func (c *RedisShards) keySlot(ctx context.Context) (int, error) {
	if c.Key == "" {
		return 0, nil
	}
	var last error
	for _, m := range c.members {
		if !m.Running() || m.Paused() {
			continue
		}
		v, err := respDo(ctx, m.Addr, "CLUSTER", "KEYSLOT", c.Key)
		if err != nil {
			last = err
			continue
		}
		n, ok := v.(int64)
		if !ok {
			return 0, fmt.Errorf("storecluster: CLUSTER KEYSLOT answered %v", v)
		}
		return int(n), nil
	}
	return 0, fmt.Errorf("storecluster: no node answers CLUSTER KEYSLOT: %v", last)
}

// view returns the shards as the running nodes see them: for each slot range's owner, the
// primary's member. It requires the running, unpaused nodes to agree on the owner of slot.
func (c *RedisShards) ownerOf(ctx context.Context, slot int) (*Member, error) {
	var owner string
	asked := 0
	for _, m := range c.members {
		if !m.Running() || m.Paused() {
			continue
		}
		nodes, err := clusterNodes(ctx, m.Addr)
		if err != nil {
			continue
		}
		asked++
		var got string
		for _, n := range nodes {
			if n.primary && !n.failing && slices.ContainsFunc(n.slots, func(r [2]int) bool { return r[0] <= slot && slot <= r[1] }) {
				got = n.addr
			}
		}
		if got == "" || (owner != "" && got != owner) {
			return nil, fmt.Errorf("storecluster: the nodes do not agree on the primary of slot %d", slot)
		}
		owner = got
	}
	if asked == 0 {
		return nil, errors.New("storecluster: no node answers")
	}
	for _, m := range c.members {
		if m.Addr == owner && m.Running() {
			if role, err := respRole(ctx, m.Addr); err == nil && role == "master" {
				return m, nil
			}
		}
	}
	return nil, fmt.Errorf("storecluster: the primary of slot %d (%s) does not answer as one", slot, owner)
}

// Leader implements Cluster: the primary of the slot of Key (slot 0 without one), once every
// running node names the same one. While they do not, it waits.
func (c *RedisShards) Leader(ctx context.Context) (*Member, error) {
	var m *Member
	err := c.poll(ctx, "a primary of the key's slot", func() (bool, error) {
		slot, err := c.keySlot(ctx)
		if err != nil {
			return false, nil
		}
		m, err = c.ownerOf(ctx, slot)
		return err == nil, nil
	})
	return m, err
}

// Primaries returns the members that are primaries now, as the running nodes say.
func (c *RedisShards) Primaries(ctx context.Context) ([]*Member, error) {
	var out []*Member
	for _, m := range c.members {
		if !m.Running() || m.Paused() {
			continue
		}
		role, err := respRole(ctx, m.Addr)
		if err != nil {
			return nil, err
		}
		if role == "master" {
			out = append(out, m)
		}
	}
	return out, nil
}

// replicaOf returns the member that replicates primary.
func (c *RedisShards) replicaOf(ctx context.Context, primary *Member) (*Member, error) {
	nodes, err := clusterNodes(ctx, primary.Addr)
	if err != nil {
		return nil, err
	}
	var pid string
	for _, n := range nodes {
		if n.self {
			pid = n.id
		}
	}
	for _, n := range nodes {
		if !n.primary && n.primaryID == pid {
			for _, m := range c.members {
				if m.Addr == n.addr {
					return m, nil
				}
			}
		}
	}
	return nil, fmt.Errorf("storecluster: %s has no replica", primary.Name)
}

// Failover implements Cluster for the shard of Key. Without loseWrites: CLUSTER FAILOVER on the
// replica, which waits for it to catch up with the primary, and the two swap roles. With
// loseWrites: the replica is stopped (SIGSTOP) and cut off, the primary acknowledges writes alone for a
// second (AfterReplicaStopped is called first), then it is killed and the replica resumed, and
// the cluster promotes the replica, which never received those writes; the old primary starts
// again and rejoins as a replica. It returns once the cluster is settled.
func (c *RedisShards) Failover(ctx context.Context, loseWrites bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, err := c.Leader(ctx)
	if err != nil {
		return err
	}
	next, err := c.replicaOf(ctx, old)
	if err != nil {
		return err
	}
	if !loseWrites {
		if _, err := respDo(ctx, next.Addr, "CLUSTER", "FAILOVER"); err != nil {
			return fmt.Errorf("storecluster: %s: CLUSTER FAILOVER: %w", next.Name, err)
		}
		if err := c.waitRole(ctx, next, "master"); err != nil {
			return err
		}
		return c.settle(ctx)
	}
	if err := next.Pause(); err != nil {
		return err
	}
	// Stopped, the replica would still find in its socket's buffer what the primary sent
	// meanwhile: the primary also drops its connection, so that it sends nothing more.
	if _, err := respDo(ctx, old.Addr, "CLIENT", "KILL", "TYPE", "replica"); err != nil {
		next.Resume()
		return fmt.Errorf("storecluster: drop the replica's connection on %s: %w", old.Name, err)
	}
	if f := c.AfterReplicaStopped; f != nil {
		f()
	}
	select {
	case <-ctx.Done():
		next.Resume()
		return ctx.Err()
	case <-time.After(redisLossWindow):
	}
	killErr := old.Kill()
	if err := next.Resume(); err != nil {
		return err
	}
	if killErr != nil {
		return killErr
	}
	if err := c.waitRole(ctx, next, "master"); err != nil {
		return err
	}
	if err := old.Start(ctx); err != nil {
		return err
	}
	return c.settle(ctx)
}

func (c *RedisShards) waitRole(ctx context.Context, m *Member, role string) error {
	return c.poll(ctx, m.Name+" to be "+role, func() (bool, error) {
		r, err := respRole(ctx, m.Addr)
		return err == nil && r == role, nil
	})
}

// Rejoin implements Rejoiner: m starts again on its data, and the cluster makes it a replica of
// the primary that replaced it (or it is the primary still, when no failover happened).
func (c *RedisShards) Rejoin(ctx context.Context, m *Member) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := m.Start(ctx); err != nil {
		return err
	}
	return c.settle(ctx)
}

// Settle implements Settler: it returns once every running node reports the cluster ok, all
// agree on one primary per slot range, and every running replica is in sync with its primary.
func (c *RedisShards) Settle(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.settle(ctx)
}

func (c *RedisShards) settle(ctx context.Context) error {
	return c.poll(ctx, "the cluster to settle", func() (bool, error) {
		for _, slot := range []int{0, 5461, 10923, 16383} {
			if _, err := c.ownerOf(ctx, slot); err != nil {
				return false, nil
			}
		}
		for _, m := range c.members {
			if !m.Running() || m.Paused() {
				continue
			}
			info, err := respInfoCluster(ctx, m.Addr)
			if err != nil || info["cluster_state"] != "ok" {
				return false, nil
			}
			repl, err := respInfo(ctx, m.Addr, "replication")
			if err != nil {
				return false, nil
			}
			if repl["role"] == "slave" {
				if repl["master_link_status"] != "up" {
					return false, nil
				}
				// Its primary must know it as its replica too (Failover asks the primary).
				p := net.JoinHostPort(repl["master_host"], repl["master_port"])
				if !knowsReplica(ctx, p, m.Addr) {
					return false, nil
				}
			}
		}
		return true, nil
	})
}

// knowsReplica reports whether the node at primary lists the node at replica as its replica.
func knowsReplica(ctx context.Context, primary, replica string) bool {
	nodes, err := clusterNodes(ctx, primary)
	if err != nil {
		return false
	}
	var self string
	for _, n := range nodes {
		if n.self {
			self = n.id
		}
	}
	return slices.ContainsFunc(nodes, func(n clusterNode) bool { return n.addr == replica && !n.primary && n.primaryID == self })
}

// respInfoCluster reads CLUSTER INFO as a map.
func respInfoCluster(ctx context.Context, addr string) (map[string]string, error) {
	v, err := respDo(ctx, addr, "CLUSTER", "INFO")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(fmt.Sprint(v), "\n") {
		if k, val, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = val
		}
	}
	return out, nil
}

// Restart implements Cluster: every node stops (SIGTERM: they write their append-only files
// and nodes.conf) and starts again on its data, and it returns once the cluster is settled.
func (c *RedisShards) Restart(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, m := range c.members {
		errs = append(errs, m.Stop())
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := StartAll(ctx, c.members); err != nil {
		return err
	}
	return c.settle(ctx)
}

// Close implements Cluster.
func (c *RedisShards) Close() error {
	var errs []error
	for _, m := range c.members {
		errs = append(errs, m.Kill())
	}
	return errors.Join(errs...)
}
