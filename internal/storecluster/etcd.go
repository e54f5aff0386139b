//go:build unix

package storecluster

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// EtcdBinEnv names the environment variable that points at an etcd binary.
const EtcdBinEnv = "LEASEHOLD_ETCD_BIN"

// Raft timing of the test clusters, in milliseconds: etcd's defaults for a LAN, spelled out so
// that a change of those defaults does not change the campaign's figures. A dead raft leader is
// replaced within about a second and a half, as a leasehold leader with L = 1s would be.
const (
	etcdHeartbeatMS = 100
	etcdElectionMS  = 1000
)

// EtcdBinary finds the etcd binary: $LEASEHOLD_ETCD_BIN, etcd on PATH, the kube binaries'
// cache ($LEASEHOLD_KUBE_ASSETS, built by scripts/kube-binaries), then the newest build under
// the user's cache directory (leasehold/etcd-*/etcd or leasehold/kube-*/etcd).
func EtcdBinary() (string, error) {
	var fallbacks []string
	if dir := os.Getenv("LEASEHOLD_KUBE_ASSETS"); dir != "" {
		fallbacks = append(fallbacks, filepath.Join(dir, "etcd"))
	}
	if cache, err := os.UserCacheDir(); err == nil {
		for _, pattern := range []string{"etcd-*", "kube-*"} {
			found, _ := filepath.Glob(filepath.Join(cache, "leasehold", pattern, "etcd"))
			slices.Sort(found)
			slices.Reverse(found) // the newest version first
			fallbacks = append(fallbacks, found...)
		}
	}
	return LookBinary(EtcdBinEnv, "etcd", fallbacks...)
}

// etcdCluster is a cluster of etcd member processes.
type etcdCluster struct {
	members []*Member
	peers   []string // each member's peer address
	client  *http.Client

	mu  sync.Mutex
	ids map[string]*Member // raft member ID (decimal) → member, learned from their status
}

// StartEtcd starts n etcd members as processes of their own on free loopback ports, with their
// data and logs (<name>.log) under dir, and returns once every member answers and the cluster
// has a leader. Raft runs with 100ms heartbeats and a 1s election timeout. The members write
// without fsync: the faults are process kills and pauses, which the page cache survives; a
// machine crash is not among them. ErrUnavailable when no etcd binary is found (EtcdBinary).
//
// Leader asks the members' status through etcd's JSON gateway. Failover moves the raft
// leadership to another member (MoveLeader); with loseWrites it returns ErrNoFailover and does
// nothing: raft acknowledges a write only once a majority holds it, so no leader change loses
// one; kill or pause the leader member instead.
func StartEtcd(ctx context.Context, dir string, n int) (Cluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("storecluster: etcd members %d: want at least 1", n)
	}
	bin, err := EtcdBinary()
	if err != nil {
		return nil, err
	}
	c := &etcdCluster{client: &http.Client{}, ids: map[string]*Member{}}
	var initial []string
	for i := 1; i <= n; i++ {
		client, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		peer, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("etcd-%d", i)
		c.members = append(c.members, &Member{Name: name, Addr: client})
		c.peers = append(c.peers, peer)
		initial = append(initial, name+"=http://"+peer)
	}
	token := fmt.Sprintf("leasehold-%d-%d", os.Getpid(), time.Now().UnixNano())
	for i, m := range c.members {
		args := []string{
			"--name", m.Name,
			"--data-dir", filepath.Join(dir, m.Name),
			"--listen-client-urls", "http://" + m.Addr,
			"--advertise-client-urls", "http://" + m.Addr,
			"--listen-peer-urls", "http://" + c.peers[i],
			"--initial-advertise-peer-urls", "http://" + c.peers[i],
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-state", "new",
			"--initial-cluster-token", token,
			"--heartbeat-interval", strconv.Itoa(etcdHeartbeatMS),
			"--election-timeout", strconv.Itoa(etcdElectionMS),
			"--unsafe-no-fsync",
			"--log-level", "warn",
		}
		m.Log = filepath.Join(dir, m.Name+".log")
		m.Command = func() *exec.Cmd { return exec.Command(bin, args...) }
		m.Ready = c.health(m)
	}
	if err := c.startAll(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// startAll starts every member at once: a member serves its clients only once it has joined
// a quorum, so starting them one after the other would wait for ever on the first.
func (c *etcdCluster) startAll(ctx context.Context) error {
	if err := StartAll(ctx, c.members); err != nil {
		return err
	}
	_, err := c.Leader(ctx)
	return err
}

func (c *etcdCluster) Backend() string    { return "etcd" }
func (c *etcdCluster) Members() []*Member { return c.members }

func (c *etcdCluster) URL(addrs []string, params map[string]string) string {
	if addrs == nil {
		for _, m := range c.members {
			addrs = append(addrs, m.Addr)
		}
	}
	u := "etcd://" + strings.Join(addrs, ",")
	if len(params) > 0 {
		var q []string
		for k, v := range params {
			q = append(q, k+"="+v)
		}
		slices.Sort(q)
		u += "?" + strings.Join(q, "&")
	}
	return u
}

// etcdUint is a uint64 of etcd's JSON gateway, which writes them as strings.
type etcdUint uint64

func (u *etcdUint) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*u = 0
		return nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	*u = etcdUint(v)
	return err
}

type etcdStatus struct {
	Header struct {
		MemberID etcdUint `json:"member_id"`
		RaftTerm etcdUint `json:"raft_term"`
	} `json:"header"`
	Leader etcdUint `json:"leader"`
}

// post sends a JSON request to a member's gateway and decodes its answer into out.
func (c *etcdCluster) post(ctx context.Context, m *Member, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+m.Addr+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("storecluster: %s %s: %s: %s", m.Name, path, resp.Status, bytes.TrimSpace(b))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// status asks one member for its raft status, within a second (a paused member answers
// nothing).
func (c *etcdCluster) status(ctx context.Context, m *Member) (etcdStatus, error) {
	var st etcdStatus
	if !m.Running() || m.Paused() {
		return st, fmt.Errorf("storecluster: %s is not running", m.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	err := c.post(ctx, m, "/v3/maintenance/status", struct{}{}, &st)
	if err == nil {
		c.mu.Lock()
		c.ids[strconv.FormatUint(uint64(st.Header.MemberID), 10)] = m
		c.mu.Unlock()
	}
	return st, err
}

// health is a member's Ready: its /health says true, which needs a leader.
func (c *etcdCluster) health(m *Member) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.Addr+"/health", nil)
		if err != nil {
			return err
		}
		resp, err := c.client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var h struct {
			Health string `json:"health"`
			Reason string `json:"reason"`
		}
		if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&h); err != nil {
			return fmt.Errorf("storecluster: %s /health: %w", m.Name, err)
		}
		if h.Health != "true" {
			return fmt.Errorf("storecluster: %s is not healthy: %s", m.Name, h.Reason)
		}
		return nil
	}
}

// Leader returns the member that says it leads and that a majority of the members follow,
// at the highest term any member reports: a member cut off or just resumed may still believe
// in an older leader for an election timeout.
func (c *etcdCluster) Leader(ctx context.Context) (*Member, error) {
	for {
		if m := c.leaderNow(ctx); m != nil {
			return m, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("storecluster: no etcd leader: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *etcdCluster) leaderNow(ctx context.Context) *Member {
	sts := make([]etcdStatus, len(c.members))
	errs := make([]error, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members {
		wg.Go(func() { sts[i], errs[i] = c.status(ctx, m) })
	}
	wg.Wait()
	votes := map[etcdUint]int{}
	var top etcdUint
	for i, st := range sts {
		if errs[i] == nil {
			top = max(top, st.Header.RaftTerm)
		}
	}
	for i, st := range sts {
		if errs[i] == nil && st.Leader != 0 && st.Header.RaftTerm == top {
			votes[st.Leader]++
		}
	}
	for i, st := range sts {
		id := st.Header.MemberID
		if errs[i] == nil && st.Leader == id && st.Header.RaftTerm == top && votes[id] > len(c.members)/2 {
			return c.members[i]
		}
	}
	return nil
}

// Failover moves the raft leadership to a running member other than the leader, and returns
// once a write through the new leader succeeds. With loseWrites: ErrNoFailover (see
// StartEtcd).
func (c *etcdCluster) Failover(ctx context.Context, loseWrites bool) error {
	if loseWrites {
		return fmt.Errorf("%w: raft does not lose acknowledged writes on a leader change", ErrNoFailover)
	}
	old, err := c.Leader(ctx)
	if err != nil {
		return err
	}
	var target *Member
	var targetID etcdUint
	for _, m := range c.members {
		if m == old {
			continue
		}
		if st, err := c.status(ctx, m); err == nil {
			target, targetID = m, st.Header.MemberID
			break
		}
	}
	if target == nil {
		return fmt.Errorf("storecluster: etcd failover: no running member besides the leader %s", old.Name)
	}
	in := map[string]string{"targetID": strconv.FormatUint(uint64(targetID), 10)}
	if err := c.post(ctx, old, "/v3/maintenance/transfer-leadership", in, nil); err != nil {
		return fmt.Errorf("storecluster: etcd failover from %s to %s: %w", old.Name, target.Name, err)
	}
	for {
		m, err := c.Leader(ctx)
		if err != nil {
			return err
		}
		if m != old {
			return c.put(ctx, m)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("storecluster: etcd failover: %s still leads: %w", old.Name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

var _ Prober = (*etcdCluster)(nil)

// Probe implements Prober: one write through each running member, at once.
func (c *etcdCluster) Probe(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, len(c.members))
	for i, m := range c.members {
		if !m.Running() || m.Paused() {
			continue
		}
		wg.Go(func() { errs[i] = c.post(ctx, m, "/v3/kv/put", probeWrite(), nil) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func probeWrite() map[string]string {
	return map[string]string{
		"key":   base64.StdEncoding.EncodeToString([]byte("storecluster/probe")),
		"value": base64.StdEncoding.EncodeToString([]byte(time.Now().Format(time.RFC3339Nano))),
	}
}

// put writes a key of the cluster's own through m, to see the cluster answer writes.
func (c *etcdCluster) put(ctx context.Context, m *Member) error {
	in := probeWrite()
	for {
		c2, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := c.post(c2, m, "/v3/kv/put", in, nil)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("storecluster: etcd write through %s: %w (last: %v)", m.Name, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Restart stops every member (SIGTERM), starts them all again on their data, and returns once
// the cluster has a leader that takes a write.
func (c *etcdCluster) Restart(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, m := range c.members {
		wg.Go(func() { _ = m.Stop() })
	}
	wg.Wait()
	if err := c.startAll(ctx); err != nil {
		return err
	}
	m, err := c.Leader(ctx)
	if err != nil {
		return err
	}
	return c.put(ctx, m)
}

func (c *etcdCluster) Close() error {
	var wg sync.WaitGroup
	errs := make([]error, len(c.members))
	for i, m := range c.members {
		wg.Go(func() { errs[i] = m.Kill() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
