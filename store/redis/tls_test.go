package redis

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

const redisServerBin = "/usr/bin/redis-server"

// redisAppPassword is the password of the ACL user "app" of the TLS server.
const redisAppPassword = "redis-app-pw-61be"

type tlsRedis struct {
	addr  string
	certs *testcerts.Set
}

// startTLSRedis starts a redis-server serving TLS only, requiring a client certificate signed
// by certs.CA, with the default user disabled and an ACL user "app".
func startTLSRedis(t *testing.T) *tlsRedis {
	t.Helper()
	bin := testenv.Binary(t, "redis-server", redisServerBin)
	certs := testcerts.New(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin,
		"--port", "0", "--tls-port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--tls-cert-file", certs.ServerCert, "--tls-key-file", certs.ServerKey,
		"--tls-ca-cert-file", certs.CA, "--tls-auth-clients", "yes",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir(),
		"--user", "default", "off",
		"--user", "app", "on", ">"+redisAppPassword, "~*", "&*", "+@all",
	)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan error, 1)
	var logs strings.Builder
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			logs.WriteString(line + "\n")
			if strings.Contains(line, "Ready to accept connections") {
				ready <- nil
				io.Copy(io.Discard, out)
				return
			}
		}
		ready <- fmt.Errorf("redis-server exited before it was ready")
	}()
	select {
	case err := <-ready:
		if err != nil {
			log := logs.String()
			if strings.Contains(log, "tls-port") && (strings.Contains(log, "Bad directive") || strings.Contains(log, "not supported")) {
				testenv.Unavailable(t, "redis-server at "+bin+" was built without TLS support:\n"+log)
			}
			t.Fatalf("%v:\n%s", err, log)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("redis-server not ready after 30s:\n%s", logs.String())
	}
	return &tlsRedis{addr: "127.0.0.1:" + strconv.Itoa(port), certs: certs}
}

func (s *tlsRedis) url(scheme, user string, kv ...string) string {
	u := url.URL{Scheme: scheme, Host: s.addr, Path: "/0"}
	if user != "" {
		u.User = url.User(user)
		if name, pw, ok := strings.Cut(user, ":"); ok {
			u.User = url.UserPassword(name, pw)
		}
	}
	q := url.Values{"dial_timeout": {"10s"}, "max_retries": {"0"}}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// TestTLS runs, on one redis-server requiring TLS with client certificates and an ACL user (N1,
// N2), the round trips and refusals of testTLSOpen, then the conformance suite and the failover
// test over TLS.
func TestTLS(t *testing.T) {
	srv := startTLSRedis(t)
	t.Run("Open", func(t *testing.T) { testTLSOpen(t, srv) })
	t.Run("Conformance", func(t *testing.T) { testTLSConformance(t, srv) })
	t.Run("Failover", func(t *testing.T) { testTLSFailover(t, srv) })
}

// suiteURL returns the URL of the stores of the conformance suite and the failover test, under
// prefix: rediss, the client certificate, the server's authority and the password from a file,
// with the client's own retries (those of the other tests).
func (s *tlsRedis) suiteURL(t *testing.T, prefix string) *url.URL {
	t.Helper()
	c := s.certs
	pwFile := c.Write(t, "suite-password", []byte(redisAppPassword+"\n"))
	u, err := url.Parse(s.url("rediss", "app", "ca", c.CA, "cert", c.ClientCert, "key", c.ClientKey, "password_file", pwFile, "prefix", prefix))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("max_retries")
	u.RawQuery = q.Encode()
	return u
}

// testTLSConformance runs the conformance suite on a store connected over TLS.
func testTLSConformance(t *testing.T, srv *tlsRedis) {
	s, err := Open(t.Context(), srv.suiteURL(t, "tls-conformance:").String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	storetest.Run(t, func(*testing.T) store.Store { return s })
}

// testTLSFailover runs the failover test with every elector's store connected over TLS: the
// test's proxies forward the TLS connections as they are, and the server's certificate holds
// 127.0.0.1, their address.
func testTLSFailover(t *testing.T, srv *tlsRedis) {
	failovertest.RunURL(t, srv.suiteURL(t, "tls-failover:").String(), func(ctx context.Context, u string) (store.Store, error) { return Open(ctx, u) })
}

// testTLSOpen opens stores over TLS with the right parameters and does a round trip with each,
// and checks that Open fails without them, quoting no secret.
func testTLSOpen(t *testing.T, srv *tlsRedis) {
	c := srv.certs
	pwFile := c.Write(t, "app-password", []byte(redisAppPassword+"\n"))
	wrongPW := c.Write(t, "wrong-password", []byte("not-the-redis-pw-8842\n"))
	tlsParams := []string{"ca", c.CA, "cert", c.ClientCert, "key", c.ClientKey}

	for i, raw := range []string{
		srv.url("rediss", "app", append(tlsParams, "password_file", pwFile)...),
		srv.url("redis", "app", append(tlsParams, "password_file", pwFile)...),
		srv.url("rediss", "app:"+redisAppPassword, tlsParams...),
		srv.url("rediss", "app", append(tlsParams, "password_file", pwFile, "servername", "localhost")...),
	} {
		s, err := Open(t.Context(), raw)
		if err != nil {
			t.Fatalf("%d: Open: %v", i, err)
		}
		key := fmt.Sprintf("tls-test:%d:%d", i, time.Now().UnixNano())
		if err := s.Create(t.Context(), key, map[string]any{"v": float64(i)}); err != nil {
			t.Fatal(err)
		}
		if doc, err := s.Get(t.Context(), key); err != nil || doc["v"] != float64(i) {
			t.Fatalf("Get = %v, %v", doc, err)
		}
		s.Close()
	}

	for _, bad := range []struct {
		name  string
		raw   string
		wants []string
	}{
		{"no client certificate", srv.url("rediss", "app", "ca", c.CA, "password_file", pwFile), []string{`"cert" and "key"`}},
		{"client certificate of another authority", srv.url("rediss", "app", "ca", c.CA, "cert", c.OtherCert, "key", c.OtherKey, "password_file", pwFile), []string{`"cert" and "key"`}},
		{"server of another authority", srv.url("rediss", "app", "ca", c.OtherCA, "cert", c.ClientCert, "key", c.ClientKey, "password_file", pwFile), []string{"unknown authority", `URL parameter "ca"`}},
		{"wrong server name", srv.url("rediss", "app", append(tlsParams, "password_file", pwFile, "servername", "redis.example")...), []string{"redis.example", `"servername"`}},
		{"system authorities only", srv.url("rediss", "app", "password_file", pwFile), []string{"unknown authority"}},
		{"no TLS", srv.url("redis", "app", "password_file", pwFile), []string{"ping"}},
		{"wrong password", srv.url("rediss", "app", append(tlsParams, "password_file", wrongPW)...), []string{"WRONGPASS"}},
		{"default user", srv.url("rediss", "", tlsParams...), []string{"ping"}},
		{"password twice", srv.url("rediss", "app:x", append(tlsParams, "password_file", pwFile)...), []string{`"password_file"`}},
		{"password file missing", srv.url("rediss", "app", append(tlsParams, "password_file", filepath.Join(c.Dir, "none"))...), []string{`"password_file"`, "none", "no such file"}},
		{"tls=false with rediss", srv.url("rediss", "app", "tls", "false"), []string{`"tls" is false`}},
		{"skip_verify with ca", srv.url("rediss", "app", "ca", c.CA, "skip_verify", "true"), []string{`"skip_verify"`}},
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
			assertNoSecret(t, msg, c, redisAppPassword, "not-the-redis-pw-8842")
		})
	}
	assertNoSecret(t, captureLogs(t).String(), c, redisAppPassword, "not-the-redis-pw-8842")
}

// assertNoSecret fails when out holds one of the secrets or a line of a private key.
func assertNoSecret(t *testing.T, out string, c *testcerts.Set, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("output quotes the secret %q: %s", s, out)
		}
	}
	for _, f := range []string{c.ClientKey, c.OtherKey, c.ServerKey} {
		for _, line := range testcerts.KeyMaterial(t, f) {
			if strings.Contains(out, line) {
				t.Errorf("output quotes the key %s: %s", f, out)
			}
		}
	}
}
