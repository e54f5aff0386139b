//go:build unix

package storecluster

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// NATSBinaryEnv names the nats-server binary of the NATS clusters; scripts/nats-binaries builds
// a current one.
const NATSBinaryEnv = "LEASEHOLD_NATS_SERVER_BIN"

// natsMinVersion is the oldest nats-server StartNATS runs: older ones let two compare-and-swaps
// on one revision of a replicated bucket both succeed, which store/nats refuses.
var natsMinVersion = [3]int{2, 9, 21}

// StartNATS starts n nats-server processes with JetStream under dir, clustered by routes on
// loopback. The binary is $LEASEHOLD_NATS_SERVER_BIN, else nats-server on PATH; one older than
// 2.9.21 is ErrUnavailable (set LEASEHOLD_NATS_SERVER_BIN=$(scripts/nats-binaries)/nats-server).
//
// The cluster's URL names the bucket "leasehold" (or the params' bucket) with n replicas, and
// Leader is the leader of that bucket's stream, KV_<bucket>, as the servers' monitoring
// endpoints report it; the last bucket URL named is the one followed. Failover asks the stream
// leader to step down ($JS.API.STREAM.LEADER.STEPDOWN); with loseWrites it kills the stream
// leader instead and starts it again once another leads. JetStream acknowledges a write only
// once a majority of the replicas stored it, so no acknowledged write is lost either way.
func StartNATS(ctx context.Context, dir string, n int) (Cluster, error) {
	bin, err := LookBinary(NATSBinaryEnv, "nats-server")
	if err != nil {
		return nil, err
	}
	v, err := NATSServerVersion(bin)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if olderVersion(v, natsMinVersion) {
		return nil, fmt.Errorf("%w: %s is nats-server %d.%d.%d, older than %d.%d.%d (set %s, e.g. to $(scripts/nats-binaries)/nats-server)",
			ErrUnavailable, bin, v[0], v[1], v[2], natsMinVersion[0], natsMinVersion[1], natsMinVersion[2], NATSBinaryEnv)
	}
	return StartNATSBinary(ctx, bin, dir, n)
}

// NATSServerVersion runs bin --version and returns its major, minor and patch numbers.
func NATSServerVersion(bin string) ([3]int, error) {
	var v [3]int
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		return v, fmt.Errorf("storecluster: %s --version: %v: %s", bin, err, out)
	}
	m := regexp.MustCompile(`v?(\d+)\.(\d+)\.(\d+)`).FindStringSubmatch(string(out))
	if m == nil {
		return v, fmt.Errorf("storecluster: %s --version: no version in %q", bin, out)
	}
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return v, nil
}

func olderVersion(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// StartNATSBinary is StartNATS with the nats-server binary bin, whatever its version (tests of
// how a client meets an old server use it).
func StartNATSBinary(ctx context.Context, bin, dir string, n int) (Cluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("storecluster: %d NATS servers", n)
	}
	c := &natsCluster{bucket: "leasehold", replicas: n}
	routes := make([]string, n)
	type ports struct{ client, route, http string }
	ps := make([]ports, n)
	for i := range ps {
		for _, p := range []*string{&ps[i].client, &ps[i].route, &ps[i].http} {
			a, err := FreeAddr()
			if err != nil {
				return nil, err
			}
			*p = a
		}
		routes[i] = "nats-route://" + ps[i].route
	}
	for i, p := range ps {
		name := fmt.Sprintf("nats-%d", i+1)
		mdir := filepath.Join(dir, name)
		if err := os.MkdirAll(mdir, 0o755); err != nil {
			return nil, fmt.Errorf("storecluster: %w", err)
		}
		conf := filepath.Join(mdir, "nats.conf")
		if err := os.WriteFile(conf, []byte(natsConfig(name, mdir, p.client, p.route, p.http, routes)), 0o644); err != nil {
			return nil, fmt.Errorf("storecluster: %w", err)
		}
		httpAddr := p.http
		m := &Member{
			Name:    name,
			Addr:    p.client,
			Command: func() *exec.Cmd { return exec.Command(bin, "-c", conf) },
			Ready:   func(ctx context.Context) error { return natsHealthy(ctx, httpAddr) },
		}
		c.members = append(c.members, m)
		c.http = append(c.http, httpAddr)
	}
	if err := c.startAll(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// natsConfig is a server's configuration file. no_advertise keeps the servers from telling
// clients each other's addresses: a client uses only the URLs it was given, which may be
// proxies in front of the servers.
func natsConfig(name, dir, client, route, http string, routes []string) string {
	q := func(s string) string { return strconv.Quote(s) }
	var rs []string
	for _, r := range routes {
		rs = append(rs, q(r))
	}
	return fmt.Sprintf(`server_name: %s
listen: %s
http: %s
log_file: %s
jetstream {
  store_dir: %s
}
cluster {
  name: "leasehold"
  listen: %s
  routes: [%s]
  no_advertise: true
}
`, q(name), q(client), q(http), q(filepath.Join(dir, "server.log")), q(filepath.Join(dir, "jetstream")), q(route), strings.Join(rs, ", "))
}

type natsCluster struct {
	members  []*Member
	http     []string // monitoring address of each member
	replicas int

	mu     sync.Mutex
	bucket string // the last one URL named
}

func (c *natsCluster) Backend() string    { return "nats" }
func (c *natsCluster) Members() []*Member { return c.members }

func (c *natsCluster) URL(addrs []string, params map[string]string) string {
	if addrs == nil {
		for _, m := range c.members {
			addrs = append(addrs, m.Addr)
		}
	}
	q := url.Values{}
	q.Set("bucket", "leasehold")
	q.Set("replicas", strconv.Itoa(c.replicas))
	for k, v := range params {
		q.Set(k, v)
	}
	c.mu.Lock()
	c.bucket = q.Get("bucket")
	c.mu.Unlock()
	return "nats://" + strings.Join(addrs, ",") + "?" + q.Encode()
}

func (c *natsCluster) stream() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return "KV_" + c.bucket
}

// startAll starts every member at once (a server's JetStream is not ready, by its healthz,
// before a majority of them meet), then waits until the JetStream meta group has a leader that
// sees every member current: before that, a stream with as many replicas as servers finds "no
// suitable peers for placement".
func (c *natsCluster) startAll(ctx context.Context) error {
	if err := StartAll(ctx, c.members); err != nil {
		return err
	}
	for {
		if c.metaComplete(ctx) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("storecluster: the NATS servers' JetStream meta group is not complete: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// metaComplete reports whether the meta group's leader sees every other member current.
func (c *natsCluster) metaComplete(ctx context.Context) bool {
	for i, m := range c.members {
		var jsz struct {
			Meta *struct {
				Leader   string `json:"leader"`
				Replicas []struct {
					Current bool `json:"current"`
				} `json:"replicas"`
			} `json:"meta_cluster"`
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := getJSON(rctx, "http://"+c.http[i]+"/jsz", &jsz)
		cancel()
		if err != nil || jsz.Meta == nil || jsz.Meta.Leader != m.Name {
			continue
		}
		current := 0
		for _, r := range jsz.Meta.Replicas {
			if r.Current {
				current++
			}
		}
		return current == len(c.members)-1
	}
	return false
}

// natsHealthy asks a server's monitoring endpoint whether it is ready, JetStream included.
func natsHealthy(ctx context.Context, httpAddr string) error {
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	code, err := getJSON(ctx, "http://"+httpAddr+"/healthz", &body)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("healthz: %d %s %s", code, body.Status, body.Error)
	}
	return nil
}

func getJSON(ctx context.Context, u string, v any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return resp.StatusCode, fmt.Errorf("%s: %w", u, err)
	}
	return resp.StatusCode, nil
}

// streamLeader returns the member that reports itself, on its monitoring endpoint (/jsz), as the
// leader of the stream; nil when none does (yet). A member's own word is taken, not its
// followers', which may lag behind an election.
func (c *natsCluster) streamLeader(ctx context.Context, stream string) (*Member, bool) {
	exists := false
	for i, m := range c.members {
		if !m.Running() {
			continue
		}
		var jsz struct {
			Accounts []struct {
				Streams []struct {
					Name    string `json:"name"`
					Cluster *struct {
						Leader string `json:"leader"`
					} `json:"cluster"`
				} `json:"stream_detail"`
			} `json:"account_details"`
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second) // a paused member answers nothing
		_, err := getJSON(rctx, "http://"+c.http[i]+"/jsz?accounts=true&streams=true", &jsz)
		cancel()
		if err != nil {
			continue
		}
		for _, a := range jsz.Accounts {
			for _, s := range a.Streams {
				if s.Name != stream {
					continue
				}
				exists = true
				if s.Cluster != nil && s.Cluster.Leader == m.Name { // its server_name
					return m, true
				}
			}
		}
	}
	return nil, exists
}

func (c *natsCluster) Leader(ctx context.Context) (*Member, error) {
	stream := c.stream()
	for {
		if m, _ := c.streamLeader(ctx, stream); m != nil {
			return m, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("storecluster: no leader of stream %s: %w", stream, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// leaderOtherThan waits for a leader of the stream other than old that answers the JetStream
// API for it.
func (c *natsCluster) leaderOtherThan(ctx context.Context, old *Member) (*Member, error) {
	stream := c.stream()
	for {
		m, _ := c.streamLeader(ctx, stream)
		if m != nil && m != old {
			tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := natsRequest(tctx, m.Addr, "$JS.API.STREAM.INFO."+stream, nil)
			cancel()
			if err == nil {
				return m, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("storecluster: no new leader of stream %s: %w", stream, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *natsCluster) Failover(ctx context.Context, loseWrites bool) error {
	old, err := c.Leader(ctx)
	if err != nil {
		return err
	}
	if len(c.members) < 2 {
		return ErrNoFailover
	}
	if loseWrites {
		if err := old.Kill(); err != nil {
			return err
		}
		if _, err := c.leaderOtherThan(ctx, old); err != nil {
			return err
		}
		return old.Start(ctx)
	}
	// A server elected a moment ago names itself leader in /jsz before it answers the API as
	// one (once it has applied its predecessor's writes), and nobody answers a request then:
	// ask again.
	stream := c.stream()
	for {
		tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := natsRequest(tctx, old.Addr, "$JS.API.STREAM.LEADER.STEPDOWN."+stream, nil)
		cancel()
		if err == nil {
			break
		}
		if m, _ := c.streamLeader(ctx, stream); m != nil && m != old {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("storecluster: step down the leader %s: %w (last: %v)", old.Name, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	_, err = c.leaderOtherThan(ctx, old)
	return err
}

var _ Prober = (*natsCluster)(nil)

// natsProbeKey is the key of the bucket that Probe writes: '_' is a character store/nats
// always escapes in its keys, so no key of the store's users is this one.
const natsProbeKey = "storecluster_probe"

// Probe implements Prober: one write into the bucket through each running member, at once,
// each answered once the stream's leader has it stored on a majority of the replicas (a
// JetStream publish acknowledgement). A paused member is skipped; a stream without a leader
// answers nothing, and the probe then ends with ctx.
func (c *natsCluster) Probe(ctx context.Context) error {
	c.mu.Lock()
	subject := "$KV." + c.bucket + "." + natsProbeKey
	c.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(c.members))
	for i, m := range c.members {
		if !m.Running() || m.Paused() {
			continue
		}
		wg.Go(func() {
			_, errs[i] = natsRequest(ctx, m.Addr, subject, []byte(time.Now().Format(time.RFC3339Nano)))
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (c *natsCluster) Restart(ctx context.Context) error {
	_, hadStream := c.streamLeader(ctx, c.stream())
	for _, m := range c.members {
		if err := m.Stop(); err != nil {
			return err
		}
	}
	if err := c.startAll(ctx); err != nil {
		return err
	}
	if hadStream {
		_, err := c.Leader(ctx)
		return err
	}
	return nil
}

func (c *natsCluster) Close() error {
	var errs []error
	for _, m := range c.members {
		errs = append(errs, m.Kill())
	}
	return errors.Join(errs...)
}

// natsRequest sends a request with payload to subject through the server at addr, in the NATS
// client protocol (INFO, CONNECT, SUB, PUB, MSG: text lines), and returns the reply's payload;
// a JetStream API error in it is an error. The package keeps to the standard library, and the
// JetStream API needs nothing more.
func natsRequest(ctx context.Context, addr, subject string, payload []byte) ([]byte, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	} else {
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()

	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(line, "INFO ") {
		return nil, fmt.Errorf("nats %s: unexpected greeting %q", addr, line)
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	inbox := "_INBOX.storecluster." + hex.EncodeToString(b)
	if _, err := fmt.Fprintf(conn, "CONNECT {\"verbose\":false,\"pedantic\":false,\"protocol\":1}\r\nSUB %s 1\r\nPUB %s %s %d\r\n%s\r\n", inbox, subject, inbox, len(payload), payload); err != nil {
		return nil, err
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("nats %s: request %s: %w", addr, subject, err)
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "PING":
			if _, err := conn.Write([]byte("PONG\r\n")); err != nil {
				return nil, err
			}
		case strings.HasPrefix(line, "-ERR"):
			return nil, fmt.Errorf("nats %s: %s", addr, line)
		case strings.HasPrefix(line, "MSG "):
			f := strings.Fields(line)
			size, err := strconv.Atoi(f[len(f)-1])
			if err != nil {
				return nil, fmt.Errorf("nats %s: bad MSG line %q", addr, line)
			}
			payload := make([]byte, size+2)
			if _, err := io.ReadFull(r, payload); err != nil {
				return nil, err
			}
			payload = payload[:size]
			var resp struct {
				Error *struct {
					Description string `json:"description"`
				} `json:"error"`
			}
			if err := json.Unmarshal(payload, &resp); err != nil {
				return nil, fmt.Errorf("nats %s: reply to %s: %w", addr, subject, err)
			}
			if resp.Error != nil {
				return nil, fmt.Errorf("nats %s: %s: %s", addr, subject, resp.Error.Description)
			}
			return payload, nil
		}
	}
}
