package redis

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
	log, err := tlstest.AwaitReady(out, "redis-server", 30*time.Second, func(line string) bool {
		return strings.Contains(line, "Ready to accept connections")
	})
	if err != nil {
		if strings.Contains(log, "tls-port") && (strings.Contains(log, "Bad directive") || strings.Contains(log, "not supported")) {
			testenv.Unavailable(t, "redis-server at "+bin+" was built without TLS support:\n"+log)
		}
		t.Fatalf("%v:\n%s", err, log)
	}
	return &tlsRedis{addr: "127.0.0.1:" + strconv.Itoa(port), certs: certs}
}

func (s *tlsRedis) url(scheme, user string, kv ...string) string {
	return tlstest.URL(url.URL{Scheme: scheme, Host: s.addr, Path: "/0"}, user,
		url.Values{"dial_timeout": {"10s"}, "max_retries": {"0"}}, kv...)
}

// TestTLS runs, on one redis-server requiring TLS with client certificates and an ACL user (N1,
// N2), the round trips and refusals of testTLSOpen, then the conformance suite and the failover
// test over TLS.
func TestTLS(t *testing.T) {
	srv := startTLSRedis(t)
	tlstest.Run(t, openStore, func(t *testing.T) { testTLSOpen(t, srv) }, func(t *testing.T, name string) string {
		return srv.suiteURL(t, "tls-"+name+":").String()
	})
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

// testTLSOpen opens stores over TLS with the right parameters and does a round trip with each,
// and checks that Open fails without them, quoting no secret.
func testTLSOpen(t *testing.T, srv *tlsRedis) {
	c := srv.certs
	pwFile := c.Write(t, "app-password", []byte(redisAppPassword+"\n"))
	wrongPW := c.Write(t, "wrong-password", []byte("not-the-redis-pw-8842\n"))
	tlsParams := []string{"ca", c.CA, "cert", c.ClientCert, "key", c.ClientKey}

	tlstest.RoundTrips(t, openStore,
		srv.url("rediss", "app", append(tlsParams, "password_file", pwFile)...),
		srv.url("redis", "app", append(tlsParams, "password_file", pwFile)...),
		srv.url("rediss", "app:"+redisAppPassword, tlsParams...),
		srv.url("rediss", "app", append(tlsParams, "password_file", pwFile, "servername", "localhost")...),
	)

	secrets := []string{redisAppPassword, "not-the-redis-pw-8842"}
	tlstest.Refusals(t, openStore, c, secrets, []tlstest.Refusal{
		tlstest.Refused("no client certificate", srv.url("rediss", "app", "ca", c.CA, "password_file", pwFile), `"cert" and "key"`),
		tlstest.Refused("client certificate of another authority", srv.url("rediss", "app", "ca", c.CA, "cert", c.OtherCert, "key", c.OtherKey, "password_file", pwFile), `"cert" and "key"`),
		tlstest.Refused("server of another authority", srv.url("rediss", "app", "ca", c.OtherCA, "cert", c.ClientCert, "key", c.ClientKey, "password_file", pwFile), "unknown authority", `URL parameter "ca"`),
		tlstest.Refused("wrong server name", srv.url("rediss", "app", append(tlsParams, "password_file", pwFile, "servername", "redis.example")...), "redis.example", `"servername"`),
		tlstest.Refused("system authorities only", srv.url("rediss", "app", "password_file", pwFile), "unknown authority"),
		tlstest.Refused("no TLS", srv.url("redis", "app", "password_file", pwFile), "ping"),
		tlstest.Refused("wrong password", srv.url("rediss", "app", append(tlsParams, "password_file", wrongPW)...), "WRONGPASS"),
		tlstest.Refused("default user", srv.url("rediss", "", tlsParams...), "ping"),
		tlstest.Refused("password twice", srv.url("rediss", "app:x", append(tlsParams, "password_file", pwFile)...), `"password_file"`),
		tlstest.Refused("password file missing", srv.url("rediss", "app", append(tlsParams, "password_file", filepath.Join(c.Dir, "none"))...), `"password_file"`, "none", "no such file"),
		tlstest.Refused("tls=false with rediss", srv.url("rediss", "app", "tls", "false"), `"tls" is false`),
		tlstest.Refused("skip_verify with ca", srv.url("rediss", "app", "ca", c.CA, "skip_verify", "true"), `"skip_verify"`),
	})
	tlstest.NoSecret(t, captureLogs(t).String(), c, secrets...)
}
