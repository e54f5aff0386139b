//go:build unix

package storecluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A PostgreSQL cluster is a primary and one streaming standby (pg_basebackup -R), as two
// postgres processes on loopback with their data in the cluster's directory. The members are
// named pg-1 and pg-2 and keep their name, port and directory across failovers; which of them
// is the primary changes. Failover promotes the standby (pg_ctl promote); the next Failover or
// Restart first makes the old primary, whose data is discarded, the standby of the new one with
// a fresh pg_basebackup, so that a cluster can fail over again and again.
//
// PostgreSQL refuses to run as root: when the tests run as root, the servers and their tools run
// as the postgres user (setpriv for the servers, whose commands Member starts, and a credential
// for the tools), the members' directories belong to it, and the cluster's directory and its
// parents are made traversable by it.
//
// The client URL names both members with target_session_attrs=read-write (libpq's multi-host
// form, which pgx reads): a client tries them in turn and keeps the one that accepts writes.

// pgUser is the database superuser initdb creates, and the system user the servers run as when
// the tests run as root.
const pgUser = "postgres"

// pgBinaries are the PostgreSQL programs of one installation.
type pgBinaries struct {
	postgres, initdb, pgCtl, basebackup, psql, controldata string
}

// findPostgres finds the server (LEASEHOLD_POSTGRES, PATH, then the newest
// /usr/lib/postgresql/*/bin) and takes the tools from its directory: they must be of its version.
func findPostgres() (pgBinaries, error) {
	fallbacks, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	slices.SortFunc(fallbacks, func(a, b string) int { return pgMajor(b) - pgMajor(a) })
	server, err := LookBinary("LEASEHOLD_POSTGRES", "postgres", fallbacks...)
	if err != nil {
		return pgBinaries{}, err
	}
	// A link on PATH (/usr/local/bin/postgres) points into the installation with the tools.
	if p, err := filepath.EvalSymlinks(server); err == nil {
		server = p
	}
	dir := filepath.Dir(server)
	b := pgBinaries{postgres: server}
	for name, p := range map[string]*string{"initdb": &b.initdb, "pg_ctl": &b.pgCtl, "pg_basebackup": &b.basebackup,
		"psql": &b.psql, "pg_controldata": &b.controldata} {
		*p = filepath.Join(dir, name)
		if _, err := os.Stat(*p); err != nil {
			return pgBinaries{}, fmt.Errorf("%w: %s has no %s beside it (set LEASEHOLD_POSTGRES to the postgres of a full installation)",
				ErrUnavailable, server, name)
		}
	}
	return b, nil
}

// pgMajor returns the major version in a path /usr/lib/postgresql/<major>/bin/postgres.
func pgMajor(p string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p))))
	return n
}

// pgCluster is the Cluster StartPostgres returns.
type pgCluster struct {
	bin     pgBinaries
	dir     string
	cred    *syscall.Credential // the postgres user's, when running as root; nil otherwise
	setpriv string              // runs a member's server as that user; "" when not root
	members []*Member
	data    []string   // each member's data directory
	logs    []*os.File // each member's server log

	mu           sync.Mutex // one fault at a time: Failover, Restart and Close hold it
	primary      int        // index in members
	standby      int        // index in members; -1 once there is none
	promoted     time.Time  // when the last promotion began
	promotedDone time.Time  // when pg_ctl saw it done
}

// Promotion returns when the last Failover asked the standby to promote, and when pg_ctl saw it
// promoted (within its polling interval, 100ms), zero before the first: no write can succeed
// between the old primary's end and began, and a client can write through the new primary
// from a moment between began and done. Tests measure from them how long the clients take.
func (c *pgCluster) Promotion() (began, done time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.promoted, c.promotedDone
}

// StartPostgres starts a primary (initdb) and a streaming standby (pg_basebackup -R) with their
// data and logs in dir, and returns once the standby streams from the primary. A missing binary
// or postgres user: an error wrapping ErrUnavailable.
func StartPostgres(ctx context.Context, dir string) (Cluster, error) {
	bin, err := findPostgres()
	if err != nil {
		return nil, err
	}
	c := &pgCluster{bin: bin, dir: dir, standby: 1}
	if os.Geteuid() == 0 {
		if err := c.asPostgresUser(); err != nil {
			return nil, err
		}
	}
	for i := range 2 {
		name := fmt.Sprintf("pg-%d", i+1)
		addr, err := FreeAddr()
		if err != nil {
			c.Close()
			return nil, err
		}
		data := filepath.Join(dir, name)
		f, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("storecluster: %w", err)
		}
		c.data, c.logs = append(c.data, data), append(c.logs, f)
		m := &Member{Name: name, Addr: addr}
		m.Command = func() *exec.Cmd { return c.serverCommand(m, data, f) }
		m.Ready = func(ctx context.Context) error {
			_, err := c.sql(ctx, m, "SELECT 1")
			return err
		}
		c.members = append(c.members, m)
	}
	if err := c.start(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// start creates the primary and its standby.
func (c *pgCluster) start(ctx context.Context) error {
	p := c.members[0]
	if err := c.emptyDir(c.data[0]); err != nil {
		return err
	}
	if err := c.run(ctx, c.bin.initdb, "-D", c.data[0], "-U", pgUser, "--auth=trust", "--no-sync",
		"--encoding=UTF8", "--locale=C"); err != nil {
		return err
	}
	if err := p.Start(ctx); err != nil {
		return c.withLog(0, err)
	}
	return c.makeStandby(ctx, 1, p)
}

// asPostgresUser prepares running the servers as the postgres user.
func (c *pgCluster) asPostgresUser() error {
	u, err := user.Lookup(pgUser)
	if err != nil {
		return fmt.Errorf("%w: PostgreSQL refuses to run as root, and there is no %s user to run it as: %v", ErrUnavailable, pgUser, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	if c.setpriv, err = LookBinary("LEASEHOLD_SETPRIV", "setpriv"); err != nil {
		return err
	}
	// The members' directories are the postgres user's; it must reach them.
	for d := c.dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("storecluster: %w", err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, fi.Mode().Perm()|0o001); err != nil {
				return fmt.Errorf("storecluster: let %s reach %s: %w", pgUser, c.dir, err)
			}
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// serverCommand runs a member's server on its port, loopback only and without a Unix socket (so
// that clusters and the machine's own server do not meet), logging to f.
func (c *pgCluster) serverCommand(m *Member, data string, f *os.File) *exec.Cmd {
	_, port, _ := strings.Cut(m.Addr, ":")
	args := []string{c.bin.postgres, "-D", data,
		"-c", "listen_addresses=127.0.0.1", "-c", "port=" + port, "-c", "unix_socket_directories=",
		// The standby's walreceiver takes it as its application_name, which
		// synchronous_standby_names names.
		"-c", "cluster_name=" + m.Name,
		// A SIGKILL loses nothing the kernel holds: fsync only matters to a machine's crash.
		"-c", "fsync=off", "-c", "shared_buffers=16MB", "-c", "max_connections=60",
		"-c", "wal_keep_size=128MB", "-c", "max_wal_senders=4",
		"-c", "wal_receiver_status_interval=1s", "-c", "wal_retrieve_retry_interval=200ms",
	}
	var cmd *exec.Cmd
	if c.setpriv != "" {
		cmd = exec.Command(c.setpriv, append([]string{"--reuid=" + strconv.Itoa(int(c.cred.Uid)),
			"--regid=" + strconv.Itoa(int(c.cred.Gid)), "--clear-groups", "--"}, args...)...)
	} else {
		cmd = exec.Command(args[0], args[1:]...)
	}
	cmd.Dir = c.dir
	// Not the *os.File itself: exec would hand the file to the process and keep it open here;
	// through a pipe, Wait ends the copy.
	cmd.Stdout, cmd.Stderr = struct{ io.Writer }{f}, struct{ io.Writer }{f}
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run runs a PostgreSQL tool as the servers' user; its output is in the error.
func (c *pgCluster) run(ctx context.Context, bin string, args ...string) error {
	_, err := c.output(ctx, bin, args...)
	return err
}

func (c *pgCluster) output(ctx context.Context, bin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = c.dir
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("storecluster: %s %s: %w: %s", filepath.Base(bin), strings.Join(args, " "), err,
			strings.TrimSpace(errOut.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// sql runs one statement on a member through psql and returns its unaligned output.
func (c *pgCluster) sql(ctx context.Context, m *Member, query string) (string, error) {
	host, port, _ := strings.Cut(m.Addr, ":")
	return c.output(ctx, c.bin.psql, "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-h", host, "-p", port,
		"-U", pgUser, "-d", "postgres", "-c", query)
}

// emptyDir makes dir an empty directory of the servers' user, as initdb and pg_basebackup want.
func (c *pgCluster) emptyDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("storecluster: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("storecluster: %w", err)
	}
	if c.cred != nil {
		if err := os.Chown(dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			return fmt.Errorf("storecluster: %w", err)
		}
	}
	return nil
}

// makeStandby copies the primary's data into member i's directory (whatever was there is
// discarded), starts it as the primary's streaming standby and waits until it streams.
func (c *pgCluster) makeStandby(ctx context.Context, i int, primary *Member) error {
	if err := c.emptyDir(c.data[i]); err != nil {
		return err
	}
	host, port, _ := strings.Cut(primary.Addr, ":")
	if err := c.run(ctx, c.bin.basebackup, "-h", host, "-p", port, "-U", pgUser, "-D", c.data[i], "-R",
		"-X", "stream", "--checkpoint=fast", "--no-sync"); err != nil {
		return err
	}
	m := c.members[i]
	if err := m.Start(ctx); err != nil {
		return c.withLog(i, err)
	}
	q := fmt.Sprintf("SELECT count(*) FROM pg_stat_replication WHERE application_name = '%s' AND state = 'streaming'", m.Name)
	return c.poll(ctx, fmt.Sprintf("%s streaming from %s", m.Name, primary.Name), func() (bool, error) {
		out, err := c.sql(ctx, primary, q)
		return out == "1", err
	})
}

// poll calls cond every 50ms until it is true or ctx ends; the error names what was awaited,
// with cond's last error.
func (c *pgCluster) poll(ctx context.Context, what string, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("storecluster: waiting for %s: %w (last: %v)", what, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// withLog adds the end of member i's log to err: why a server did not start is there.
func (c *pgCluster) withLog(i int, err error) error {
	b, _ := os.ReadFile(c.logs[i].Name())
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return fmt.Errorf("%w; end of %s: %s", err, c.logs[i].Name(), strings.TrimSpace(string(b)))
}

func (c *pgCluster) Backend() string { return "postgres" }

func (c *pgCluster) Members() []*Member { return slices.Clone(c.members) }

// URL names the members in their fixed order, with target_session_attrs=read-write, as user
// postgres on database postgres.
func (c *pgCluster) URL(addrs []string, params map[string]string) string {
	if addrs == nil {
		for _, m := range c.members {
			addrs = append(addrs, m.Addr)
		}
	}
	q := url.Values{"target_session_attrs": {"read-write"}}
	for k, v := range params {
		q.Set(k, v)
	}
	return "postgres://" + pgUser + "@" + strings.Join(addrs, ",") + "/postgres?" + q.Encode()
}

// Leader returns the member that is out of recovery: the primary.
func (c *pgCluster) Leader(ctx context.Context) (*Member, error) {
	var leader *Member
	err := c.poll(ctx, "a primary", func() (bool, error) {
		var errs []error
		for _, m := range c.members {
			if !m.Running() {
				continue
			}
			out, err := c.sql(ctx, m, "SELECT pg_is_in_recovery()")
			if err == nil && out == "f" {
				leader = m
				return true, nil
			}
			errs = append(errs, err)
		}
		return false, errors.Join(errs...)
	})
	return leader, err
}

// Failover promotes the standby. Without loseWrites, the primary shuts down cleanly first (its
// walsender sends the standby all its WAL up to the shutdown checkpoint, which Failover checks
// the standby replayed). With loseWrites, the standby stops receiving WAL (primary_conninfo
// emptied), the primary goes on acknowledging writes until it has written WAL the standby does
// not have, then is killed. Failover returns right after the promotion, with the old primary
// stopped: the next Failover or Restart first makes it the new primary's standby, from a fresh
// copy of the new primary's data (its own has diverged). Starting the old primary's Member
// directly would bring back a second primary: PostgreSQL's own split brain, which the cluster
// does not model.
func (c *pgCluster) Failover(ctx context.Context, loseWrites bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ensureStandby(ctx); err != nil {
		return err
	}
	pi, si := c.primary, c.standby
	p, s := c.members[pi], c.members[si]
	if loseWrites {
		if err := c.detach(ctx, p, s); err != nil {
			return err
		}
		if err := p.Kill(); err != nil {
			return err
		}
	} else {
		if err := c.handOver(ctx, pi, s); err != nil {
			return err
		}
	}
	c.primary, c.standby = si, -1
	c.promoted = time.Now()
	if err := c.run(ctx, c.bin.pgCtl, "promote", "-D", c.data[si], "-w", "-t", "60"); err != nil {
		return c.withLog(si, err)
	}
	c.promotedDone = time.Now()
	// No replication source left over from detach, in the new primary's settings, which the
	// next standby copies.
	if _, err := c.sql(ctx, s, "ALTER SYSTEM RESET primary_conninfo"); err != nil {
		return err
	}
	_, err := c.sql(ctx, s, "SELECT pg_reload_conf()")
	return err
}

var _ Rejoiner = (*pgCluster)(nil)

// ManualFailover implements Manual: no process watches the primary to promote the standby.
func (c *pgCluster) ManualFailover() bool { return true }

// Rejoin starts m, a member that was killed or that a Failover left stopped, in its role, so
// that the cluster always has exactly one primary: the primary again on its data (PostgreSQL
// has no automatic failover, so the cluster had no primary until then), the standby on its data,
// streaming again; a former primary is rebuilt from a copy of the new primary's data
// (pg_basebackup) as its standby, its own data having diverged.
func (c *pgCluster) Rejoin(ctx context.Context, m *Member) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.members, m)
	switch {
	case i < 0:
		return fmt.Errorf("storecluster: %s is not a member of the cluster", m.Name)
	case m.Running():
		return nil
	case i == c.primary:
		if err := m.Start(ctx); err != nil {
			return c.withLog(i, err)
		}
		return nil
	case i == c.standby:
		if err := m.Start(ctx); err != nil {
			return c.withLog(i, err)
		}
		return c.waitStreaming(ctx, c.members[c.primary], m)
	default:
		return c.ensureStandby(ctx)
	}
}

// waitStreaming waits until standby s streams from primary p.
func (c *pgCluster) waitStreaming(ctx context.Context, p, s *Member) error {
	q := fmt.Sprintf("SELECT count(*) FROM pg_stat_replication WHERE application_name = '%s' AND state = 'streaming'", s.Name)
	return c.poll(ctx, fmt.Sprintf("%s streaming from %s", s.Name, p.Name), func() (bool, error) {
		out, err := c.sql(ctx, p, q)
		return out == "1", err
	})
}

// ensureStandby makes the member that is not the primary its standby, when it is not already.
func (c *pgCluster) ensureStandby(ctx context.Context) error {
	if c.standby >= 0 {
		return nil
	}
	old := 1 - c.primary
	p := c.members[c.primary]
	if err := c.makeStandby(ctx, old, p); err != nil {
		_ = c.members[old].Kill()
		return fmt.Errorf("storecluster: %s did not become the standby of %s, the cluster has no standby: %w",
			c.members[old].Name, p.Name, err)
	}
	c.standby = old
	return nil
}

// handOver stops primary pi cleanly and waits until standby s has replayed its shutdown
// checkpoint: every write the primary acknowledged.
func (c *pgCluster) handOver(ctx context.Context, pi int, s *Member) error {
	if err := c.stop(c.members[pi]); err != nil {
		return err
	}
	out, err := c.output(ctx, c.bin.controldata, "-D", c.data[pi])
	if err != nil {
		return err
	}
	var lsn string
	for line := range strings.SplitSeq(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Latest checkpoint location:"); ok {
			lsn = strings.TrimSpace(v)
		}
	}
	if lsn == "" {
		return fmt.Errorf("storecluster: pg_controldata of %s shows no checkpoint location", c.members[pi].Name)
	}
	q := fmt.Sprintf("SELECT pg_last_wal_replay_lsn() >= '%s'::pg_lsn", lsn)
	return c.poll(ctx, fmt.Sprintf("%s to replay %s's WAL up to %s", s.Name, c.members[pi].Name, lsn), func() (bool, error) {
		out, err := c.sql(ctx, s, q)
		return out == "t", err
	})
}

// detach makes standby s stop receiving WAL from primary p, and returns once p has written
// WAL that s does not have: the clients' writes (or, after a second without any, one of its own,
// a logical message), all acknowledged by p, which the promotion of s will lose.
func (c *pgCluster) detach(ctx context.Context, p, s *Member) error {
	if _, err := c.sql(ctx, s, "ALTER SYSTEM SET primary_conninfo = ''"); err != nil {
		return err
	}
	if _, err := c.sql(ctx, s, "SELECT pg_reload_conf()"); err != nil {
		return err
	}
	if err := c.poll(ctx, s.Name+"'s walreceiver to stop", func() (bool, error) {
		out, err := c.sql(ctx, s, "SELECT count(*) FROM pg_stat_wal_receiver")
		return out == "0", err
	}); err != nil {
		return err
	}
	received, err := c.sql(ctx, s, "SELECT pg_last_wal_receive_lsn()")
	if err != nil {
		return err
	}
	q := fmt.Sprintf("SELECT pg_current_wal_flush_lsn() > '%s'::pg_lsn", received)
	own := time.Now().Add(time.Second)
	return c.poll(ctx, p.Name+" to write WAL "+s.Name+" did not receive", func() (bool, error) {
		if time.Now().After(own) {
			if _, err := c.sql(ctx, p, "SELECT pg_logical_emit_message(false, 'storecluster', 'lost')"); err != nil {
				return false, err
			}
		}
		out, err := c.sql(ctx, p, q)
		return out == "t", err
	})
}

// stop shuts a member down cleanly. Member.Stop's SIGTERM is PostgreSQL's smart shutdown, which
// waits for every client to disconnect: SIGINT (fast shutdown) ends their sessions first.
func (c *pgCluster) stop(m *Member) error {
	if pid := m.Pid(); pid != 0 {
		_ = syscall.Kill(pid, syscall.SIGINT)
	}
	return m.Stop()
}

// Restart stops the standby and the primary cleanly and starts them again on their data, the
// primary first, and returns once the standby streams again. After a Failover, the old primary
// is made the standby first.
func (c *pgCluster) Restart(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ensureStandby(ctx); err != nil {
		return err
	}
	order := []int{c.primary, c.standby}
	for _, i := range slices.Backward(order) {
		if err := c.stop(c.members[i]); err != nil {
			return err
		}
	}
	for _, i := range order {
		if err := c.members[i].Start(ctx); err != nil {
			return c.withLog(i, err)
		}
	}
	p, s := c.members[c.primary], c.members[c.standby]
	q := fmt.Sprintf("SELECT count(*) FROM pg_stat_replication WHERE application_name = '%s' AND state = 'streaming'", s.Name)
	return c.poll(ctx, s.Name+" streaming again", func() (bool, error) {
		out, err := c.sql(ctx, p, q)
		return out == "1", err
	})
}

// Close shuts every member down (fast shutdown) and closes the logs.
func (c *pgCluster) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, m := range slices.Backward(c.members) {
		errs = append(errs, c.stop(m))
	}
	for _, f := range c.logs {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}
