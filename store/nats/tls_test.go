package nats

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/leasehold/leasehold/internal/failovertest"
	"github.com/leasehold/leasehold/internal/testcerts"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

const natsServerBin = "/usr/sbin/nats-server"

// tlsNATS is a nats-server process with JetStream, requiring TLS with a client certificate
// signed by certs.CA, and one of two users: an nkey user, and "app" with password
// natsAppPassword.
type tlsNATS struct {
	addr     string
	certs    *testcerts.Set
	nkeyFile string // the nkey user's private key file
}

const natsAppPassword = "nats-app-pw-93f2"

func startTLSNATS(t *testing.T) *tlsNATS {
	t.Helper()
	bin := testenv.Binary(t, "nats-server", natsServerBin)
	certs := testcerts.New(t)
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	priv, err := kp.Seed()
	if err != nil {
		t.Fatal(err)
	}
	nkeyFile := certs.Write(t, "user.nk", append(priv, '\n'))
	dir := t.TempDir()
	conf := fmt.Sprintf(`listen: "127.0.0.1:-1"
jetstream { store_dir: %q }
tls {
  cert_file: %q
  key_file: %q
  ca_file: %q
  verify: true
  timeout: 5
}
authorization {
  users: [
    { nkey: %q }
    { user: "app", password: %q }
  ]
}
`, filepath.Join(dir, "js"), certs.ServerCert, certs.ServerKey, certs.CA, pub, natsAppPassword)
	return &tlsNATS{addr: runNATSServer(t, bin, dir, conf), certs: certs, nkeyFile: nkeyFile}
}

// runNATSServer starts bin with the configuration conf, written in dir, stopped when the test
// ends, and returns its client address once it is ready.
func runNATSServer(t *testing.T, bin, dir, conf string) string {
	t.Helper()
	confFile := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(confFile, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", confFile)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Wait for the line naming the client port, then for "Server is ready".
	listening := regexp.MustCompile(`Listening for client connections on (127\.0\.0\.1:\d+)`)
	addr, ready := "", make(chan error, 1)
	var logs strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			logs.WriteString(line + "\n")
			if m := listening.FindStringSubmatch(line); m != nil {
				addr = m[1]
			}
			if strings.Contains(line, "Server is ready") {
				ready <- nil
				io.Copy(io.Discard, stderr)
				return
			}
		}
		ready <- fmt.Errorf("nats-server exited before it was ready: %v", sc.Err())
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("%v\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("nats-server not ready after 30s")
	}
	if addr == "" {
		t.Fatal("nats-server did not say its client port")
	}
	return addr
}

func (s *tlsNATS) url(user string, kv ...string) string {
	u := url.URL{Scheme: "nats", Host: s.addr}
	if user != "" {
		u.User = url.User(user)
		if name, pw, ok := strings.Cut(user, ":"); ok {
			u.User = url.UserPassword(name, pw)
		}
	}
	q := url.Values{"storage": {"memory"}, "dial_timeout": {"10s"}}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// TestTLS runs, on one nats-server requiring TLS with client certificates and nkey or password
// authentication (N1, N2), the round trips and refusals of testTLSOpen, then the conformance
// suite and the failover test over TLS.
func TestTLS(t *testing.T) {
	srv := startTLSNATS(t)
	t.Run("Open", func(t *testing.T) { testTLSOpen(t, srv) })
	t.Run("Conformance", func(t *testing.T) { testTLSConformance(t, srv) })
	t.Run("Failover", func(t *testing.T) { testTLSFailover(t, srv) })
}

// suiteURL returns the URL of the stores of the conformance suite and the failover test, on
// bucket: the client certificate, the server's authority and the nkey user.
func (s *tlsNATS) suiteURL(t *testing.T, bucket string) *url.URL {
	t.Helper()
	c := s.certs
	u, err := url.Parse(s.url("", "ca", c.CA, "cert", c.ClientCert, "key", c.ClientKey, "nkey", s.nkeyFile, "bucket", bucket))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// testTLSConformance runs the conformance suite on a store connected over TLS.
func testTLSConformance(t *testing.T, srv *tlsNATS) {
	s, err := Open(t.Context(), srv.suiteURL(t, "tls_conformance").String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	storetest.Run(t, func(*testing.T) store.Store { return s })
}

// testTLSFailover runs the failover test with every elector's store connected over TLS: the
// test's proxies forward the TLS connections as they are, and the server's certificate holds
// 127.0.0.1, their address.
func testTLSFailover(t *testing.T, srv *tlsNATS) {
	failovertest.RunURL(t, srv.suiteURL(t, "tls_failover").String(), func(ctx context.Context, u string) (store.Store, error) { return Open(ctx, u) })
}

// testTLSOpen opens stores over TLS with the right parameters and does a round trip with each,
// and checks that Open fails without them, quoting no secret.
func testTLSOpen(t *testing.T, srv *tlsNATS) {
	c := srv.certs
	pwFile := c.Write(t, "app-password", []byte(natsAppPassword+"\n"))
	wrongPW := c.Write(t, "wrong-password", []byte("not-the-nats-pw-5120\n"))
	tlsParams := []string{"ca", c.CA, "cert", c.ClientCert, "key", c.ClientKey}

	for i, raw := range []string{
		srv.url("", append(tlsParams, "nkey", srv.nkeyFile, "bucket", "tls_nkey")...),
		srv.url("app", append(tlsParams, "password_file", pwFile, "bucket", "tls_pwfile")...),
		srv.url("app:"+natsAppPassword, append(tlsParams, "bucket", "tls_pw")...),
		srv.url("", append(tlsParams, "nkey", srv.nkeyFile, "bucket", "tls_name", "servername", "localhost")...),
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
		{"no client certificate", srv.url("", "ca", c.CA, "nkey", srv.nkeyFile), []string{`"cert" and "key"`}},
		{"client certificate of another authority", srv.url("", "ca", c.CA, "cert", c.OtherCert, "key", c.OtherKey, "nkey", srv.nkeyFile), []string{`"cert" and "key"`}},
		{"server of another authority", srv.url("", "ca", c.OtherCA, "cert", c.ClientCert, "key", c.ClientKey, "nkey", srv.nkeyFile), []string{"unknown authority", `URL parameter "ca"`}},
		{"wrong server name", srv.url("", append(tlsParams, "nkey", srv.nkeyFile, "servername", "nats.example")...), []string{"nats.example", `"servername"`}},
		{"no TLS parameters", srv.url("", "nkey", srv.nkeyFile), []string{"certificate"}},
		{"wrong password", srv.url("app", append(tlsParams, "password_file", wrongPW)...), []string{"Authorization Violation"}},
		{"no credentials", srv.url("", tlsParams...), []string{"Authorization Violation"}},
		{"password twice", srv.url("app:x", append(tlsParams, "password_file", pwFile)...), []string{`"password_file"`}},
		{"nkey and password", srv.url("app", append(tlsParams, "password_file", pwFile, "nkey", srv.nkeyFile)...), []string{"credentials given twice"}},
		{"nkey file missing", srv.url("", append(tlsParams, "nkey", filepath.Join(c.Dir, "none.nk"))...), []string{`"nkey"`, "none.nk", "no such file"}},
		{"nkey file of another kind", srv.url("", append(tlsParams, "nkey", c.ClientKey)...), []string{`"nkey"`, c.ClientKey}},
		{"creds file missing", srv.url("", append(tlsParams, "creds", filepath.Join(c.Dir, "none.creds"))...), []string{`"creds"`, "none.creds"}},
		{"creds file of another kind", srv.url("", append(tlsParams, "creds", c.CA)...), []string{`"creds"`, c.CA, "not a NATS credentials file"}},
		{"password file missing", srv.url("app", append(tlsParams, "password_file", filepath.Join(c.Dir, "none"))...), []string{`"password_file"`, "none"}},
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
			assertNoSecret(t, msg, c, srv.nkeyFile, natsAppPassword, "not-the-nats-pw-5120")
		})
	}
}

// credsNATS is a nats-server process in operator mode, requiring TLS with a client certificate
// signed by certs.CA, whose one account (besides the system's) has JetStream; creds is a
// credentials file of a user of that account, unknownCreds one of an account the server does
// not know, signed by the same operator.
type credsNATS struct {
	addr                string
	certs               *testcerts.Set
	creds, unknownCreds string
	userKeys            []string // the private nkeys of the users of the credentials files
}

// startCredsNATS makes an operator, a system account, an account with JetStream and its user,
// as nsc would, and starts a nats-server trusting the operator, with the accounts in a memory
// resolver.
func startCredsNATS(t *testing.T) *credsNATS {
	t.Helper()
	bin := testenv.Binary(t, "nats-server", natsServerBin)
	certs := testcerts.New(t)
	srv := &credsNATS{certs: certs}
	newKey := func(create func() (nkeys.KeyPair, error)) (nkeys.KeyPair, string) {
		t.Helper()
		kp, err := create()
		if err != nil {
			t.Fatal(err)
		}
		pub, err := kp.PublicKey()
		if err != nil {
			t.Fatal(err)
		}
		return kp, pub
	}
	encode := func(c interface {
		Encode(nkeys.KeyPair) (string, error)
	}, signer nkeys.KeyPair) string {
		t.Helper()
		s, err := c.Encode(signer)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	operator, operatorPub := newKey(nkeys.CreateOperator)
	_, sysPub := newKey(nkeys.CreateAccount)
	oc := jwt.NewOperatorClaims(operatorPub)
	oc.Name = "leasehold-test"
	oc.SystemAccount = sysPub
	operatorJWT := encode(oc, operator)
	account := func(pub, name string, js bool) string {
		t.Helper()
		ac := jwt.NewAccountClaims(pub)
		ac.Name = name
		if js {
			ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
		}
		return encode(ac, operator)
	}
	// A user of the account acct and its credentials file.
	creds := func(acct nkeys.KeyPair, acctPub, file string) string {
		t.Helper()
		user, userPub := newKey(nkeys.CreateUser)
		uc := jwt.NewUserClaims(userPub)
		uc.Name = "leasehold"
		uc.IssuerAccount = acctPub
		priv, err := user.Seed()
		if err != nil {
			t.Fatal(err)
		}
		srv.userKeys = append(srv.userKeys, string(priv))
		data, err := jwt.FormatUserConfig(encode(uc, acct), priv)
		if err != nil {
			t.Fatal(err)
		}
		return certs.Write(t, file, data)
	}
	app, appPub := newKey(nkeys.CreateAccount)
	srv.creds = creds(app, appPub, "app.creds")
	unknown, unknownPub := newKey(nkeys.CreateAccount)
	srv.unknownCreds = creds(unknown, unknownPub, "unknown.creds")

	dir := t.TempDir()
	conf := fmt.Sprintf(`listen: "127.0.0.1:-1"
jetstream { store_dir: %q }
tls {
  cert_file: %q
  key_file: %q
  ca_file: %q
  verify: true
  timeout: 5
}
operator: %q
system_account: %q
resolver: MEMORY
resolver_preload: {
  %s: %q
  %s: %q
}
`, filepath.Join(dir, "js"), certs.ServerCert, certs.ServerKey, certs.CA, operatorJWT, sysPub,
		sysPub, account(sysPub, "SYS", false), appPub, account(appPub, "APP", true))
	srv.addr = runNATSServer(t, bin, dir, conf)
	return srv
}

// TestTLSCreds opens stores with a credentials file (creds) on a nats-server in operator mode
// requiring TLS (N1, N2).
func TestTLSCreds(t *testing.T) {
	srv := startCredsNATS(t)
	c := srv.certs
	tlsParams := []string{"ca", c.CA, "cert", c.ClientCert, "key", c.ClientKey}
	natsURL := (&tlsNATS{addr: srv.addr}).url

	s, err := Open(t.Context(), natsURL("", append(tlsParams, "creds", srv.creds, "bucket", "tls_creds")...))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Create(t.Context(), "k", map[string]any{"v": "creds"}); err != nil {
		t.Fatal(err)
	}
	if doc, err := s.Get(t.Context(), "k"); err != nil || doc["v"] != "creds" {
		t.Fatalf("Get = %v, %v", doc, err)
	}
	s.Close()

	for _, bad := range []struct {
		name  string
		raw   string
		wants []string
	}{
		{"account unknown to the server", natsURL("", append(tlsParams, "creds", srv.unknownCreds)...), []string{"Authorization Violation"}},
		{"no credentials", natsURL("", tlsParams...), []string{"Authorization Violation"}},
		{"password instead", natsURL("app:"+natsAppPassword, tlsParams...), []string{"Authorization Violation"}},
		{"creds without TLS", natsURL("", "creds", srv.creds), []string{"unknown authority"}},
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
			assertNoSecret(t, msg, c, "", append(srv.userKeys, natsAppPassword, "PRIVATE KEY", "USER NKEY")...)
		})
	}
}

// assertNoSecret fails when out holds one of the secrets, a line of a private key, or the
// private nkey of nkeyFile (when not "").
func assertNoSecret(t *testing.T, out string, c *testcerts.Set, nkeyFile string, secrets ...string) {
	t.Helper()
	if nkeyFile != "" {
		nk, err := os.ReadFile(nkeyFile)
		if err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, strings.TrimSpace(string(nk)))
	}
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
