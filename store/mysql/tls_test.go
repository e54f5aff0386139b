package mysql

import (
	"net"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testcerts"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/internal/tlstest"
)

const (
	mariadbdBin  = "/usr/sbin/mariadbd"
	installDBBin = "/usr/bin/mariadb-install-db"
	// mysqlAppPassword is the password of the user app of the TLS server, which also needs a
	// client certificate (REQUIRE X509).
	mysqlAppPassword = "mysql-app-pw-2b9d"
)

type tlsMariaDB struct {
	addr  string
	certs *testcerts.Set
}

// startTLSMariaDB starts a private MariaDB in a temporary directory, on a free loopback port,
// with require_secure_transport and a user app needing a password and a client certificate
// signed by certs.CA.
func startTLSMariaDB(t *testing.T) *tlsMariaDB {
	t.Helper()
	bin := testenv.Binary(t, "mariadbd", mariadbdBin)
	install := testenv.Binary(t, "mariadb-install-db", installDBBin)
	certs := testcerts.New(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if out, err := exec.Command(install, "--no-defaults", "--datadir="+data, "--user=root",
		"--auth-root-authentication-method=socket", "--skip-test-db").CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	initSQL := certs.Write(t, "init.sql", []byte(`CREATE DATABASE IF NOT EXISTS test;
CREATE USER 'app'@'%' IDENTIFIED BY '`+mysqlAppPassword+`' REQUIRE X509;
GRANT ALL ON test.* TO 'app'@'%';
`))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--no-defaults", "--datadir="+data, "--user=root",
		"--socket="+filepath.Join(dir, "sock"), "--port="+strconv.Itoa(port), "--bind-address=127.0.0.1",
		"--pid-file="+filepath.Join(dir, "pid"), "--skip-name-resolve", "--skip-log-bin",
		"--innodb-buffer-pool-size=16M", "--init-file="+initSQL,
		"--ssl-ca="+certs.CA, "--ssl-cert="+certs.ServerCert, "--ssl-key="+certs.ServerKey,
		"--require-secure-transport=ON")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if log, err := tlstest.AwaitReady(stderr, "mariadbd", 60*time.Second, func(line string) bool {
		return strings.Contains(line, "ready for connections")
	}); err != nil {
		t.Fatalf("%v:\n%s", err, log)
	}
	return &tlsMariaDB{addr: "127.0.0.1:" + strconv.Itoa(port), certs: certs}
}

func (s *tlsMariaDB) url(user string, kv ...string) string {
	return tlstest.URL(url.URL{Scheme: "mysql", Host: s.addr, Path: "/test"}, user, url.Values{"timeout": {"5s"}}, kv...)
}

// TestTLS runs, on one MariaDB requiring TLS, with a user needing a password and a client
// certificate (N1, N2), the round trips and refusals of testTLSOpen, then the conformance suite
// and the failover test over TLS.
func TestTLS(t *testing.T) {
	srv := startTLSMariaDB(t)
	tlstest.Run(t, openStore, func(t *testing.T) { testTLSOpen(t, srv) }, func(t *testing.T, name string) string {
		return srv.suiteURL(t, "tls_"+name)
	})
}

// suiteURL returns the URL of the stores of the conformance suite and the failover test, on
// table: the client certificate, the server's authority and the password from a file.
func (s *tlsMariaDB) suiteURL(t *testing.T, table string) string {
	t.Helper()
	c := s.certs
	pwFile := c.Write(t, "suite-password", []byte(mysqlAppPassword+"\n"))
	return s.url("app", "ca", c.CA, "cert", c.ClientCert, "key", c.ClientKey, "password_file", pwFile, "table", table)
}

// testTLSOpen opens stores over TLS with the right parameters and does a round trip with each,
// and checks that Open fails without them, quoting no secret.
func testTLSOpen(t *testing.T, srv *tlsMariaDB) {
	c := srv.certs
	pwFile := c.Write(t, "app-password", []byte(mysqlAppPassword+"\n"))
	wrongPW := c.Write(t, "wrong-password", []byte("not-the-mysql-pw-7731\n"))
	tlsParams := []string{"ca", c.CA, "cert", c.ClientCert, "key", c.ClientKey}

	tlstest.RoundTrips(t, openStore,
		srv.url("app", append(tlsParams, "password_file", pwFile, "table", "tls_a")...),
		srv.url("app:"+mysqlAppPassword, append(tlsParams, "tls", "true", "table", "tls_b")...),
		srv.url("app", append(tlsParams, "password_file", pwFile, "servername", "localhost", "table", "tls_c")...),
	)

	tlstest.Refusals(t, openStore, c, []string{mysqlAppPassword, "not-the-mysql-pw-7731"}, []tlstest.Refusal{
		tlstest.Refused("no client certificate", srv.url("app", "ca", c.CA, "password_file", pwFile), "Access denied"),
		tlstest.Refused("server of another authority", srv.url("app", "ca", c.OtherCA, "cert", c.ClientCert, "key", c.ClientKey, "password_file", pwFile), "unknown authority", `URL parameter "ca"`),
		tlstest.Refused("wrong server name", srv.url("app", append(tlsParams, "password_file", pwFile, "servername", "db.example")...), "db.example", `"servername"`),
		tlstest.Refused("system authorities only", srv.url("app", "tls", "true", "password_file", pwFile), "unknown authority"),
		tlstest.Refused("no TLS", srv.url("app", "password_file", pwFile), "Access denied"),
		tlstest.Refused("wrong password", srv.url("app", append(tlsParams, "password_file", wrongPW)...), "Access denied"),
		tlstest.Refused("password twice", srv.url("app:x", append(tlsParams, "password_file", pwFile)...), `"password_file"`),
		tlstest.Refused("password file without user", srv.url("", append(tlsParams, "password_file", pwFile)...), `"password_file"`, "user name"),
		tlstest.Refused("password file missing", srv.url("app", append(tlsParams, "password_file", filepath.Join(c.Dir, "none"))...), `"password_file"`, "none", "no such file"),
		tlstest.Refused("ca with tls=skip-verify", srv.url("app", "ca", c.CA, "tls", "skip-verify"), `"ca"`, "tls=skip-verify"),
		tlstest.Refused("unreadable CA", srv.url("app", "ca", filepath.Join(c.Dir, "none.pem")), `"ca"`, "none.pem"),
	})
}
