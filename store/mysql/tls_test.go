package mysql

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/failovertest"
	"github.com/leasehold/leasehold/internal/testcerts"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
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
	ready := make(chan error, 1)
	var logs strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			logs.WriteString(line + "\n")
			if strings.Contains(line, "ready for connections") {
				ready <- nil
				io.Copy(io.Discard, stderr)
				return
			}
		}
		ready <- fmt.Errorf("mariadbd exited before it was ready")
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("%v:\n%s", err, logs.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("mariadbd not ready after 60s:\n%s", logs.String())
	}
	return &tlsMariaDB{addr: "127.0.0.1:" + strconv.Itoa(port), certs: certs}
}

func (s *tlsMariaDB) url(user string, kv ...string) string {
	u := url.URL{Scheme: "mysql", Host: s.addr, Path: "/test"}
	if user != "" {
		u.User = url.User(user)
		if name, pw, ok := strings.Cut(user, ":"); ok {
			u.User = url.UserPassword(name, pw)
		}
	}
	q := url.Values{"timeout": {"5s"}}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// TestTLS runs, on one MariaDB requiring TLS, with a user needing a password and a client
// certificate (N1, N2), the round trips and refusals of testTLSOpen, then the conformance suite
// and the failover test over TLS.
func TestTLS(t *testing.T) {
	srv := startTLSMariaDB(t)
	t.Run("Open", func(t *testing.T) { testTLSOpen(t, srv) })
	t.Run("Conformance", func(t *testing.T) { testTLSConformance(t, srv) })
	t.Run("Failover", func(t *testing.T) { testTLSFailover(t, srv) })
}

// suiteURL returns the URL of the stores of the conformance suite and the failover test, on
// table: the client certificate, the server's authority and the password from a file.
func (s *tlsMariaDB) suiteURL(t *testing.T, table string) string {
	t.Helper()
	c := s.certs
	pwFile := c.Write(t, "suite-password", []byte(mysqlAppPassword+"\n"))
	return s.url("app", "ca", c.CA, "cert", c.ClientCert, "key", c.ClientKey, "password_file", pwFile, "table", table)
}

// testTLSConformance runs the conformance suite on a store connected over TLS.
func testTLSConformance(t *testing.T, srv *tlsMariaDB) {
	s, err := Open(t.Context(), srv.suiteURL(t, "tls_conformance"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	storetest.Run(t, func(*testing.T) store.Store { return s })
}

// testTLSFailover runs the failover test with every elector's store connected over TLS: the
// test's proxies forward the TLS connections as they are, and the server's certificate holds
// 127.0.0.1, their address.
func testTLSFailover(t *testing.T, srv *tlsMariaDB) {
	failovertest.RunURL(t, srv.suiteURL(t, "tls_failover"), func(ctx context.Context, u string) (store.Store, error) { return Open(ctx, u) })
}

// testTLSOpen opens stores over TLS with the right parameters and does a round trip with each,
// and checks that Open fails without them, quoting no secret.
func testTLSOpen(t *testing.T, srv *tlsMariaDB) {
	c := srv.certs
	pwFile := c.Write(t, "app-password", []byte(mysqlAppPassword+"\n"))
	wrongPW := c.Write(t, "wrong-password", []byte("not-the-mysql-pw-7731\n"))
	tlsParams := []string{"ca", c.CA, "cert", c.ClientCert, "key", c.ClientKey}

	for i, raw := range []string{
		srv.url("app", append(tlsParams, "password_file", pwFile, "table", "tls_a")...),
		srv.url("app:"+mysqlAppPassword, append(tlsParams, "tls", "true", "table", "tls_b")...),
		srv.url("app", append(tlsParams, "password_file", pwFile, "servername", "localhost", "table", "tls_c")...),
	} {
		s, err := Open(t.Context(), raw)
		if err != nil {
			t.Fatalf("%d: Open: %v", i, err)
		}
		if err := s.Create(t.Context(), "k", map[string]any{"v": float64(i)}); err != nil {
			t.Fatal(err)
		}
		if doc, err := s.Get(t.Context(), "k"); err != nil || doc["v"] != float64(i) {
			t.Fatalf("Get = %v, %v", doc, err)
		}
		s.Close()
	}

	for _, bad := range []struct {
		name  string
		raw   string
		wants []string
	}{
		{"no client certificate", srv.url("app", "ca", c.CA, "password_file", pwFile), []string{"Access denied"}},
		{"server of another authority", srv.url("app", "ca", c.OtherCA, "cert", c.ClientCert, "key", c.ClientKey, "password_file", pwFile), []string{"unknown authority", `URL parameter "ca"`}},
		{"wrong server name", srv.url("app", append(tlsParams, "password_file", pwFile, "servername", "db.example")...), []string{"db.example", `"servername"`}},
		{"system authorities only", srv.url("app", "tls", "true", "password_file", pwFile), []string{"unknown authority"}},
		{"no TLS", srv.url("app", "password_file", pwFile), []string{"Access denied"}},
		{"wrong password", srv.url("app", append(tlsParams, "password_file", wrongPW)...), []string{"Access denied"}},
		{"password twice", srv.url("app:x", append(tlsParams, "password_file", pwFile)...), []string{`"password_file"`}},
		{"password file without user", srv.url("", append(tlsParams, "password_file", pwFile)...), []string{`"password_file"`, "user name"}},
		{"password file missing", srv.url("app", append(tlsParams, "password_file", filepath.Join(c.Dir, "none"))...), []string{`"password_file"`, "none", "no such file"}},
		{"ca with tls=skip-verify", srv.url("app", "ca", c.CA, "tls", "skip-verify"), []string{`"ca"`, "tls=skip-verify"}},
		{"unreadable CA", srv.url("app", "ca", filepath.Join(c.Dir, "none.pem")), []string{`"ca"`, "none.pem"}},
	} {
		t.Run(bad.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			s, err := Open(ctx, bad.raw)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			msg := err.Error()
			for _, w := range bad.wants {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			for _, s := range []string{mysqlAppPassword, "not-the-mysql-pw-7731"} {
				if strings.Contains(msg, s) {
					t.Errorf("error quotes the password %q: %s", s, msg)
				}
			}
			for _, f := range []string{c.ClientKey, c.OtherKey, c.ServerKey} {
				for _, line := range testcerts.KeyMaterial(t, f) {
					if strings.Contains(msg, line) {
						t.Errorf("error quotes the key %s: %s", f, msg)
					}
				}
			}
		})
	}
}
