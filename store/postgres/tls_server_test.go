//go:build unix

package postgres

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testcerts"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/internal/tlstest"
)

const (
	initdbBin   = "/usr/local/bin/initdb"
	postgresBin = "/usr/local/bin/postgres"
	// pgCertUser is the user of the TLS server that logs in with a client certificate: the
	// common name of testcerts' client certificate.
	pgCertUser = "leasehold-client"
	// pgAppPassword is the password of the user app of the TLS server (scram-sha-256, over TLS).
	pgAppPassword = "pg-app-pw-6e1a"
	// pgOtherUser logs in with a client certificate too, and testcerts has none for it.
	pgOtherUser = "someone-else"
)

// pgHBA lets in TLS connections only: app with its password, the others with a client
// certificate signed by ssl_ca_file whose common name is the user's name.
const pgHBA = `hostssl all app 127.0.0.1/32 scram-sha-256
hostssl all all 127.0.0.1/32 cert
`

type tlsPostgres struct {
	addr  string
	certs *testcerts.Set
}

// startTLSPostgres initializes and starts a private PostgreSQL in a temporary directory, on a
// free loopback port, with ssl=on, the hba rules of pgHBA, and the databases client (owned by
// pgCertUser) and app (owned by app). PostgreSQL refuses to run as root: a test running as root
// runs initdb and postgres as nobody, in a directory given to nobody.
func startTLSPostgres(t *testing.T) *tlsPostgres {
	t.Helper()
	initdb := testenv.Binary(t, "initdb", initdbBin)
	bin := testenv.Binary(t, "postgres", postgresBin)
	certs := testcerts.New(t)

	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	// Not t.TempDir: its parent is private to the test's user. A short path, too: the Unix
	// socket's path must fit in 107 bytes.
	dir, err := os.MkdirTemp("", "lh-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	own := func(path string) {
		t.Helper()
		if cred != nil {
			if err := os.Chown(path, int(cred.Uid), int(cred.Gid)); err != nil {
				t.Fatal(err)
			}
		}
	}
	own(dir)
	// The server's key must belong to the server's user and be private to it.
	copyTo := func(src, name string) string {
		t.Helper()
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		own(p)
		return p
	}
	serverCert := copyTo(certs.ServerCert, "server.pem")
	serverKey := copyTo(certs.ServerKey, "server-key.pem")
	ca := copyTo(certs.CA, "ca.pem")

	command := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C")
		// Its own process group, so that the cleanup can end the server's children too.
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
		return cmd
	}
	data := filepath.Join(dir, "data")
	if out, err := command(initdb, "-D", data, "-U", "postgres", "-E", "UTF8", "--locale=C",
		"--no-sync", "--auth=reject").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	hba := filepath.Join(dir, "pg_hba.conf")
	if err := os.WriteFile(hba, []byte(pgHBA), 0o600); err != nil {
		t.Fatal(err)
	}
	own(hba)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	settings := []string{
		"listen_addresses=127.0.0.1", "port=" + strconv.Itoa(port), "unix_socket_directories=" + dir,
		"ssl=on", "ssl_cert_file=" + serverCert, "ssl_key_file=" + serverKey, "ssl_ca_file=" + ca,
		"hba_file=" + hba, "password_encryption=scram-sha-256",
		"fsync=off", "shared_buffers=16MB", "max_connections=20", "logging_collector=off",
	}
	// --single must come first, the database last.
	args := func(mode ...string) []string {
		a := append(mode, "-D", data)
		for _, s := range settings {
			a = append(a, "-c", s)
		}
		return a
	}

	// The users and databases, in single-user mode: no connection, so no hba rule for it.
	setup := command(bin, append(args("--single"), "postgres")...)
	setup.Stdin = strings.NewReader(fmt.Sprintf(`CREATE ROLE %q LOGIN
CREATE ROLE %q LOGIN
CREATE ROLE app LOGIN PASSWORD '%s'
CREATE DATABASE client OWNER %q
CREATE DATABASE app OWNER app
`, pgCertUser, pgOtherUser, pgAppPassword, pgCertUser))
	if out, err := setup.CombinedOutput(); err != nil || strings.Contains(string(out), "ERROR:") {
		t.Fatalf("postgres --single: %v\n%s", err, out)
	}

	cmd := command(bin, args()...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The server's log, until its end: the postmaster and every process it started hold it.
	ready, done := make(chan struct{}), make(chan struct{})
	var logs strings.Builder
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			logs.WriteString(line + "\n")
			if strings.Contains(line, "database system is ready to accept connections") {
				close(ready)
				io.Copy(io.Discard, stderr)
				return
			}
		}
	}()
	t.Cleanup(func() { stopPostgres(t, cmd, done) })
	select {
	case <-ready:
	case <-done:
		cmd.Wait()
		t.Fatalf("postgres exited before it was ready:\n%s", logs.String())
	case <-time.After(60 * time.Second):
		stopPostgres(t, cmd, done)
		t.Fatalf("postgres not ready after 60s:\n%s", logs.String())
	}
	return &tlsPostgres{addr: "127.0.0.1:" + strconv.Itoa(port), certs: certs}
}

// stopPostgres shuts the server down (a fast shutdown: its sessions are ended) and waits for
// the end of its log, which every process of the server holds, then for the postmaster. If that
// takes more than 30s, it kills the server's process group.
func stopPostgres(t *testing.T, cmd *exec.Cmd, logDone <-chan struct{}) {
	t.Helper()
	if cmd.ProcessState != nil {
		return
	}
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-logDone:
	case <-time.After(30 * time.Second):
		t.Errorf("postgres still running 30s after SIGINT: killing its process group")
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-logDone
	}
	cmd.Wait()
}

// url returns the URL of the server's database db as user (user:password for one in the URL),
// with the parameters kv.
func (s *tlsPostgres) url(user, db string, kv ...string) string {
	return tlstest.URL(url.URL{Scheme: "postgres", Host: s.addr, Path: "/" + db}, user, url.Values{"connect_timeout": {"10"}}, kv...)
}

// TestTLSServer runs, on one PostgreSQL accepting TLS connections only, with a user logging in
// with a client certificate and one with a password (N1, N2), the round trips and refusals of
// testTLSOpen, then the conformance suite and the failover test over TLS.
func TestTLSServer(t *testing.T) {
	srv := startTLSPostgres(t)
	tlstest.Run(t, openStore, func(t *testing.T) { testTLSOpen(t, srv) }, func(_ *testing.T, name string) string {
		return srv.suiteURL("tls_" + name)
	})
}

// suiteURL returns the URL of the stores of the conformance suite and the failover test, on
// table: verify-full with the server's authority, and the client certificate of pgCertUser.
func (s *tlsPostgres) suiteURL(table string) string {
	c := s.certs
	return s.url(pgCertUser, "client", "sslmode", "verify-full", "sslrootcert", c.CA,
		"sslcert", c.ClientCert, "sslkey", c.ClientKey, "table", table)
}

// testTLSOpen opens stores over TLS with the right parameters and does a round trip with each,
// and checks that Open fails without them, quoting no secret.
func testTLSOpen(t *testing.T, srv *tlsPostgres) {
	c := srv.certs
	pwFile := c.Write(t, "app-password", []byte(pgAppPassword+"\n"))
	wrongPW := c.Write(t, "wrong-password", []byte("not-the-pg-pw-8d27\n"))
	verified := []string{"sslmode", "verify-full", "sslrootcert", c.CA}
	clientCert := append(verified, "sslcert", c.ClientCert, "sslkey", c.ClientKey)

	tlstest.RoundTrips(t, openStore,
		srv.url(pgCertUser, "client", append(clientCert, "table", "tls_cert")...),
		srv.url(pgCertUser, "client", "sslmode", "verify-ca", "sslrootcert", c.CA, "sslcert", c.ClientCert, "sslkey", c.ClientKey, "table", "tls_verify_ca"),
		srv.url("app", "app", append(verified, "password_file", pwFile, "table", "tls_pwfile")...),
		srv.url("app:"+pgAppPassword, "app", append(verified, "table", "tls_pw")...),
	)

	tlstest.Refusals(t, openStore, c, []string{pgAppPassword, "not-the-pg-pw-8d27", "PRIVATE KEY"}, []tlstest.Refusal{
		tlstest.Refused("no client certificate", srv.url(pgCertUser, "client", verified...), "requires a valid client certificate"),
		tlstest.Refused("client certificate of another authority", srv.url(pgCertUser, "client", append(verified, "sslcert", c.OtherCert, "sslkey", c.OtherKey)...), "requires a valid client certificate"),
		tlstest.Refused("client certificate of another user", srv.url(pgOtherUser, "client", clientCert...), "certificate authentication failed", pgOtherUser),
		tlstest.Refused("server of another authority", srv.url(pgCertUser, "client", "sslmode", "verify-full", "sslrootcert", c.OtherCA, "sslcert", c.ClientCert, "sslkey", c.ClientKey), "unknown authority"),
		tlstest.Refused("system authorities only", srv.url(pgCertUser, "client", "sslmode", "verify-full", "sslcert", c.ClientCert, "sslkey", c.ClientKey), "unknown authority"),
		tlstest.Refused("no TLS", srv.url(pgCertUser, "client", "sslmode", "disable"), "no pg_hba.conf entry", "no encryption"),
		tlstest.Refused("no TLS, with a password", srv.url("app", "app", "sslmode", "disable", "password_file", pwFile), "no pg_hba.conf entry", "no encryption"),
		tlstest.Refused("wrong password", srv.url("app", "app", append(verified, "password_file", wrongPW)...), "password authentication failed", "app"),
		tlstest.Refused("wrong password in the URL", srv.url("app:not-the-pg-pw-8d27", "app", verified...), "password authentication failed", "app"),
		tlstest.Refused("no password", srv.url("app", "app", verified...), "password authentication failed", "app"),
	})
}
