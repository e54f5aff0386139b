//go:build unix

package storecluster

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ZooKeeperJarEnv names the environment variable that points at the ZooKeeper server's jar
// (Debian's zookeeper package installs /usr/share/java/zookeeper.jar, whose manifest names the
// jars it needs).
const ZooKeeperJarEnv = "LEASEHOLD_ZOOKEEPER_JAR"

// ZooKeeperTickMS is the tick of the test servers, in milliseconds: ZooKeeper bounds a session's
// timeout to between 2 and 20 ticks, so the tests may ask for sessions of 400ms to 4s, and a
// dead ensemble leader is replaced within a few ticks.
const ZooKeeperTickMS = 200

// zkMain is the class that runs a server, standalone or as a member of an ensemble.
const zkMain = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

// ZooKeeperJar finds the ZooKeeper server's jar: $LEASEHOLD_ZOOKEEPER_JAR, else the one of
// Debian's package (/usr/share/java/zookeeper.jar, /usr/share/zookeeper/zookeeper.jar), and
// java on PATH (or $JAVA_HOME/bin/java) to run it. Missing: ErrUnavailable.
func ZooKeeperJar() (jar, java string, err error) {
	jar, err = LookBinary(ZooKeeperJarEnv, "zookeeper.jar", "/usr/share/java/zookeeper.jar", "/usr/share/zookeeper/zookeeper.jar")
	if err != nil {
		return "", "", fmt.Errorf("%w; scripts/services installs Debian's zookeeper package", err)
	}
	var fallbacks []string
	if home := os.Getenv("JAVA_HOME"); home != "" {
		fallbacks = append(fallbacks, filepath.Join(home, "bin", "java"))
	}
	java, err = LookBinary("LEASEHOLD_JAVA_BIN", "java", fallbacks...)
	if err != nil {
		return "", "", err
	}
	return jar, java, nil
}

// zkClasspath returns the class path of the servers: the jar, and beside it (Debian's
// /usr/share/java) the jars its manifest leaves out: Netty's codec, which the Netty connection
// factory of the TLS port needs, and SLF4J's simple logger, so that a server's warnings and
// errors reach its log file instead of nowhere.
func zkClasspath(jar string) string {
	cp := []string{jar}
	for _, name := range []string{"netty-codec.jar", "slf4j-simple.jar"} {
		if p := filepath.Join(filepath.Dir(jar), name); fileExists(p) {
			cp = append(cp, p)
		}
	}
	return strings.Join(cp, string(os.PathListSeparator))
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// ZooKeeperCluster is a ZooKeeper ensemble (or a single standalone server) of processes on
// loopback.
type ZooKeeperCluster struct {
	members []*Member
	secure  []string // each member's TLS client address, when started with TLS
	dir     string
}

// ZooKeeperTLS asks the servers to serve clients over TLS too, on a port of its own
// (secureClientPort, with Netty's connection factory): Cert and Key are the PEM files of the
// servers' certificate and key, CA the PEM file of the authority their clients' certificates
// must come from when ClientAuth is set.
type ZooKeeperTLS struct {
	Cert, Key, CA string
	ClientAuth    bool
}

var _ Cluster = (*ZooKeeperCluster)(nil)

// StartZooKeeper starts n ZooKeeper servers as processes of their own (java QuorumPeerMain, a
// zoo.cfg each, written under dir with their data and logs, <name>.log), on free loopback
// ports, and returns once each serves clients (the "srvr" command names its mode), which in an
// ensemble needs a leader. One server runs standalone; more form an ensemble whose members elect
// their own leader. The servers tick every 200ms (ZooKeeperTickMS), write without fsync (the
// faults are process kills and pauses, which the page cache survives), have their admin server
// off and answer the four-letter commands srvr, ruok, mntr and cons. ErrUnavailable when no
// server jar or no java is found (ZooKeeperJar).
//
// Leader asks each member's mode ("srvr"); Failover returns ErrNoFailover: ZooKeeper moves its
// leadership by election only (kill or pause the leader), and a write is acknowledged once a
// quorum logged it, so no leader change loses one. Probe (Prober) writes a znode of its own,
// /storecluster-probe, through each running member, by a small client of ZooKeeper's protocol.
func StartZooKeeper(ctx context.Context, dir string, n int) (Cluster, error) {
	return StartZooKeeperTLS(ctx, dir, n, nil)
}

// StartZooKeeperTLS is StartZooKeeper with the servers serving TLS too when tlsCfg is not nil
// (see ZooKeeperCluster.SecureAddrs); the plain client ports stay, for the four-letter
// commands. The Cluster it returns is a *ZooKeeperCluster.
func StartZooKeeperTLS(ctx context.Context, dir string, n int, tlsCfg *ZooKeeperTLS) (Cluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("storecluster: zookeeper members %d: want at least 1", n)
	}
	jar, java, err := ZooKeeperJar()
	if err != nil {
		return nil, err
	}
	c := &ZooKeeperCluster{dir: dir}
	classpath := zkClasspath(jar)
	var servers []string
	for i := 1; i <= n; i++ {
		client, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("zk-%d", i)
		c.members = append(c.members, &Member{Name: name, Addr: client})
		if tlsCfg != nil {
			secure, err := FreeAddr()
			if err != nil {
				return nil, err
			}
			c.secure = append(c.secure, secure)
		}
		if n > 1 {
			peer, err := FreeAddr()
			if err != nil {
				return nil, err
			}
			election, err := FreeAddr()
			if err != nil {
				return nil, err
			}
			_, pp, _ := net.SplitHostPort(peer)
			_, ep, _ := net.SplitHostPort(election)
			servers = append(servers, fmt.Sprintf("server.%d=127.0.0.1:%s:%s", i, pp, ep))
		}
	}
	for i, m := range c.members {
		data := filepath.Join(dir, m.Name)
		if err := os.MkdirAll(data, 0o755); err != nil {
			return nil, fmt.Errorf("storecluster: %w", err)
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(i+1)+"\n"), 0o644); err != nil {
			return nil, fmt.Errorf("storecluster: %w", err)
		}
		_, port, _ := net.SplitHostPort(m.Addr)
		cfg := []string{
			"tickTime=" + strconv.Itoa(ZooKeeperTickMS),
			"initLimit=10",
			"syncLimit=5",
			"dataDir=" + data,
			"clientPort=" + port,
			"clientPortAddress=127.0.0.1",
			"admin.enableServer=false",
			"4lw.commands.whitelist=srvr,ruok,mntr,cons",
			"forceSync=no",
			// The members listen on loopback only, like the client port.
			"quorumListenOnAllIPs=false",
		}
		if tlsCfg != nil {
			tlsLines, err := zkTLSConfig(dir, c.secure[i], tlsCfg)
			if err != nil {
				return nil, err
			}
			cfg = append(cfg, tlsLines...)
		}
		cfg = append(cfg, servers...)
		file := filepath.Join(dir, m.Name+".cfg")
		if err := os.WriteFile(file, []byte(strings.Join(cfg, "\n")+"\n"), 0o644); err != nil {
			return nil, fmt.Errorf("storecluster: %w", err)
		}
		args := []string{
			// A small heap and the client compiler: the servers are small, and start faster so.
			"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
			"-Dzookeeper.jmx.log4j.disable=true",
			"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
			"-cp", classpath, zkMain, file,
		}
		m.Log = filepath.Join(dir, m.Name+".log")
		m.Command = func() *exec.Cmd { return exec.Command(java, args...) }
		m.Ready = func(ctx context.Context) error {
			_, err := ZooKeeperMode(ctx, m.Addr)
			return err
		}
	}
	if err := c.startAll(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// zkTLSConfig returns the zoo.cfg lines of a server serving TLS on addr, and writes the PEM
// key store ZooKeeper reads (the certificate and the key in one file) under dir.
func zkTLSConfig(dir, addr string, t *ZooKeeperTLS) ([]string, error) {
	cert, err := os.ReadFile(t.Cert)
	if err != nil {
		return nil, fmt.Errorf("storecluster: %w", err)
	}
	key, err := os.ReadFile(t.Key)
	if err != nil {
		return nil, fmt.Errorf("storecluster: %w", err)
	}
	store := filepath.Join(dir, "zk-keystore.pem")
	if err := os.WriteFile(store, append(append(key, '\n'), cert...), 0o600); err != nil {
		return nil, fmt.Errorf("storecluster: %w", err)
	}
	_, port, _ := net.SplitHostPort(addr)
	auth := "none"
	if t.ClientAuth {
		auth = "need"
	}
	lines := []string{
		"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
		"secureClientPort=" + port,
		"secureClientPortAddress=127.0.0.1",
		"ssl.keyStore.location=" + store,
		"ssl.keyStore.type=PEM",
		"ssl.clientAuth=" + auth,
	}
	if t.CA != "" {
		lines = append(lines, "ssl.trustStore.location="+t.CA, "ssl.trustStore.type=PEM")
	}
	return lines, nil
}

// SecureAddrs returns the members' TLS client addresses (in the order of Members), nil when
// the cluster was started without TLS.
func (c *ZooKeeperCluster) SecureAddrs() []string { return c.secure }

func (c *ZooKeeperCluster) startAll(ctx context.Context) error {
	if err := StartAll(ctx, c.members); err != nil {
		return err
	}
	_, err := c.Leader(ctx)
	return err
}

// Backend implements Cluster.
func (c *ZooKeeperCluster) Backend() string { return "zk" }

// Members implements Cluster.
func (c *ZooKeeperCluster) Members() []*Member { return c.members }

// URL implements Cluster: zk://addr,addr,addr/leasehold with params as its query. The chroot
// is /leasehold unless params has "chroot" (its value a path), which is then no query parameter.
func (c *ZooKeeperCluster) URL(addrs []string, params map[string]string) string {
	if addrs == nil {
		for _, m := range c.members {
			addrs = append(addrs, m.Addr)
		}
	}
	chroot := "/leasehold"
	var q []string
	for k, v := range params {
		if k == "chroot" {
			chroot = "/" + strings.TrimPrefix(v, "/")
			continue
		}
		q = append(q, k+"="+v)
	}
	u := "zk://" + strings.Join(addrs, ",") + chroot
	if len(q) > 0 {
		slices.Sort(q)
		u += "?" + strings.Join(q, "&")
	}
	return u
}

// ZooKeeperMode asks the server at addr its four-letter command "srvr" and returns the mode it
// reports ("leader", "follower", "standalone"); a server that is not serving (no quorum) is an
// error.
func ZooKeeperMode(ctx context.Context, addr string) (string, error) {
	out, err := ZooKeeperCommand(ctx, addr, "srvr")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if mode, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(mode), nil
		}
	}
	return "", fmt.Errorf("storecluster: zookeeper %s is not serving: %s", addr, strings.TrimSpace(out))
}

// ZooKeeperCommand sends a four-letter command to the server at addr and returns its answer,
// within ctx and at most a second (a paused server answers nothing).
func ZooKeeperCommand(ctx context.Context, addr, cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", err
	}
	var b strings.Builder
	_, err = io.Copy(&b, bufio.NewReader(conn))
	if err != nil && b.Len() == 0 {
		return "", fmt.Errorf("storecluster: zookeeper %s %s: %w", addr, cmd, err)
	}
	return b.String(), nil
}

// Leader implements Cluster: the member whose mode is leader (or standalone), once a majority
// of the members follow a leader; it waits while the ensemble has none.
func (c *ZooKeeperCluster) Leader(ctx context.Context) (*Member, error) {
	for {
		if m := c.leaderNow(ctx); m != nil {
			return m, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("storecluster: no zookeeper leader: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *ZooKeeperCluster) leaderNow(ctx context.Context) *Member {
	modes := make([]string, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members {
		if !m.Running() || m.Paused() {
			continue
		}
		wg.Go(func() { modes[i], _ = ZooKeeperMode(ctx, m.Addr) })
	}
	wg.Wait()
	var leader *Member
	serving := 0
	for i, mode := range modes {
		switch mode {
		case "standalone":
			return c.members[i]
		case "leader":
			leader = c.members[i]
			serving++
		case "follower":
			serving++
		}
	}
	if leader != nil && serving > len(c.members)/2 {
		return leader
	}
	return nil
}

// Failover implements Cluster: ErrNoFailover (see StartZooKeeper).
func (c *ZooKeeperCluster) Failover(ctx context.Context, loseWrites bool) error {
	return fmt.Errorf("%w: ZooKeeper changes its leader by election only", ErrNoFailover)
}

// Restart implements Cluster: every member is stopped (SIGTERM), then all start again on their
// data, and it returns once the ensemble has a leader again.
func (c *ZooKeeperCluster) Restart(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, m := range c.members {
		wg.Go(func() { _ = m.Stop() })
	}
	wg.Wait()
	return c.startAll(ctx)
}

// Close implements Cluster: every member is killed.
func (c *ZooKeeperCluster) Close() error {
	var wg sync.WaitGroup
	errs := make([]error, len(c.members))
	for i, m := range c.members {
		wg.Go(func() { errs[i] = m.Kill() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

var _ Prober = (*ZooKeeperCluster)(nil)

// Probe implements Prober: through each running member at once, a session of its own that
// writes the znode /storecluster-probe (a write goes through the ensemble's leader and a
// quorum), then closes.
func (c *ZooKeeperCluster) Probe(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, len(c.members))
	for i, m := range c.members {
		if !m.Running() || m.Paused() {
			continue
		}
		wg.Go(func() {
			if err := zkProbe(ctx, m.Addr); err != nil {
				errs[i] = fmt.Errorf("storecluster: probe of %s: %w", m.Name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ZooKeeper's wire protocol, as much of it as a probe needs: jute's big-endian integers, and
// strings and buffers as a 32-bit length and the bytes.
const (
	zkOpCreate  = 1
	zkOpSetData = 5
	zkOpClose   = -11

	zkErrNodeExists = -110
	zkProbePath     = "/storecluster-probe"
)

// zkProbe opens a session with the server at addr, creates the probe znode if missing, sets
// its data, and closes the session, within ctx.
func zkProbe(ctx context.Context, addr string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	// The connect request: protocol version, last zxid seen, timeout (ms), session ID,
	// password; its answer carries no header.
	var b zkBuf
	b.int32(0)
	b.int64(0)
	b.int32(4000)
	b.int64(0)
	b.bytes(make([]byte, 16))
	if err := zkSend(conn, b); err != nil {
		return err
	}
	if _, err := zkRead(conn); err != nil {
		return fmt.Errorf("no session: %w", err)
	}
	data := []byte(time.Now().Format(time.RFC3339Nano))
	var create zkBuf
	create.int32(1)
	create.int32(zkOpCreate)
	create.string(zkProbePath)
	create.bytes(data)
	create.int32(1) // one ACL: world:anyone, every permission
	create.int32(0x1f)
	create.string("world")
	create.string("anyone")
	create.int32(0) // persistent
	if err := zkRequest(conn, create, zkErrNodeExists); err != nil {
		return fmt.Errorf("create %s: %w", zkProbePath, err)
	}
	var set zkBuf
	set.int32(2)
	set.int32(zkOpSetData)
	set.string(zkProbePath)
	set.bytes(data)
	set.int32(-1) // any version
	if err := zkRequest(conn, set); err != nil {
		return fmt.Errorf("set %s: %w", zkProbePath, err)
	}
	var bye zkBuf
	bye.int32(3)
	bye.int32(zkOpClose)
	return zkRequest(conn, bye)
}

// zkBuf is a request being encoded.
type zkBuf []byte

func (b *zkBuf) int32(v int32)   { *b = binary.BigEndian.AppendUint32(*b, uint32(v)) }
func (b *zkBuf) int64(v int64)   { *b = binary.BigEndian.AppendUint64(*b, uint64(v)) }
func (b *zkBuf) bytes(v []byte)  { b.int32(int32(len(v))); *b = append(*b, v...) }
func (b *zkBuf) string(v string) { b.bytes([]byte(v)) }

// zkSend writes b as one packet (its length, then it).
func zkSend(conn net.Conn, b zkBuf) error {
	_, err := conn.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...))
	return err
}

// zkRead reads one packet.
func zkRead(conn net.Conn) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(conn, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > 1<<20 {
		return nil, fmt.Errorf("a packet of %d bytes", size)
	}
	p := make([]byte, size)
	_, err := io.ReadFull(conn, p)
	return p, err
}

// zkRequest sends a request, whose header's xid b starts with, and reads packets until its
// answer (the server may send watch events first, xid -1): an error unless the answer's error
// code is 0 or one of ok.
func zkRequest(conn net.Conn, b zkBuf, ok ...int32) error {
	if err := zkSend(conn, b); err != nil {
		return err
	}
	xid := int32(binary.BigEndian.Uint32(b[:4]))
	for {
		p, err := zkRead(conn)
		if err != nil {
			return err
		}
		if len(p) < 16 {
			return fmt.Errorf("an answer of %d bytes", len(p))
		}
		if int32(binary.BigEndian.Uint32(p[:4])) != xid {
			continue
		}
		code := int32(binary.BigEndian.Uint32(p[12:16]))
		if code != 0 && !slices.Contains(ok, code) {
			return fmt.Errorf("ZooKeeper error %d", code)
		}
		return nil
	}
}
