package etcd

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/leasehold/leasehold/internal/failovertest"
	"github.com/leasehold/leasehold/internal/testcerts"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// tlsEtcd is an embedded etcd serving its clients over TLS only, requiring a client
// certificate signed by certs.CA, with authentication enabled: user root, password
// tlsRootPassword.
type tlsEtcd struct {
	addr  string
	certs *testcerts.Set
}

const tlsRootPassword = "etcd-r00t-pw-7d1c"

func startTLSEtcd(t *testing.T) *tlsEtcd {
	t.Helper()
	certs := testcerts.New(t)
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	cfg.LogLevel = "fatal"
	cfg.LogOutputs = []string{"stderr"}
	client, peer := freeURL(), freeURL()
	client.Scheme = "https"
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ClientTLSInfo = transport.TLSInfo{
		CertFile: certs.ServerCert, KeyFile: certs.ServerKey, TrustedCAFile: certs.CA, ClientCertAuth: true,
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatal(err)
	case <-time.After(60 * time.Second):
		t.Fatal("the TLS etcd is not ready after 60s")
	}
	srv := &tlsEtcd{addr: client.Host, certs: certs}

	// Enable authentication, with the client certificate and no user yet.
	tlsCfg, err := (&transport.TLSInfo{CertFile: certs.ClientCert, KeyFile: certs.ClientKey, TrustedCAFile: certs.CA}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{"https://" + client.Host}, TLS: tlsCfg, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	if _, err := c.UserAdd(ctx, "root", tlsRootPassword); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UserGrantRole(ctx, "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}
	return srv
}

// url returns the server's URL with the query parameters kv (pairs), and the user info.
func (s *tlsEtcd) url(user string, kv ...string) string {
	u := url.URL{Scheme: "etcd", Host: s.addr}
	if user != "" {
		u.User = url.User(user)
		if name, pw, ok := strings.Cut(user, ":"); ok {
			u.User = url.UserPassword(name, pw)
		}
	}
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// TestTLS runs, on one etcd requiring TLS with client certificates and passwords (N1, N2),
// the round trips and refusals of testTLSOpen, then the conformance suite and the failover test
// over TLS.
func TestTLS(t *testing.T) {
	srv := startTLSEtcd(t)
	t.Run("Open", func(t *testing.T) { testTLSOpen(t, srv) })
	t.Run("Conformance", func(t *testing.T) { testTLSConformance(t, srv) })
	t.Run("Failover", func(t *testing.T) { testTLSFailover(t, srv) })
}

// suiteParams returns the query parameters of the stores of the conformance suite and the
// failover test: the client certificate, the server's authority and the password from a file.
func (s *tlsEtcd) suiteParams(t *testing.T) []string {
	t.Helper()
	c := s.certs
	pwFile := c.Write(t, "suite-password", []byte(tlsRootPassword+"\n"))
	return []string{"ca", c.CA, "cert", c.ClientCert, "key", c.ClientKey, "password_file", pwFile, "dial_timeout", "20s"}
}

// testTLSConformance runs the conformance suite on a store connected over TLS.
func testTLSConformance(t *testing.T, srv *tlsEtcd) {
	s, err := Open(t.Context(), srv.url("root", append(srv.suiteParams(t), "prefix", "tls-conformance/")...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	storetest.Run(t, func(*testing.T) store.Store { return s })
}

// testTLSFailover runs the failover test with every elector's store connected over TLS: the
// test's proxies forward the TLS connections as they are, and the server's certificate holds
// 127.0.0.1, their address.
func testTLSFailover(t *testing.T, srv *tlsEtcd) {
	failovertest.RunURL(t, srv.url("root", append(srv.suiteParams(t), "prefix", "tls-failover/")...), func(ctx context.Context, u string) (store.Store, error) { return Open(ctx, u) })
}

// testTLSOpen opens stores over TLS: with the right parameters a round trip works; without the
// client certificate, with another authority, with a wrong server name or a wrong password,
// Open fails, and its error never quotes the password or key material.
func testTLSOpen(t *testing.T, srv *tlsEtcd) {
	c := srv.certs
	pwFile := filepath.Join(c.Dir, "etcd-password")
	if err := os.WriteFile(pwFile, []byte(tlsRootPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wrongPW := filepath.Join(c.Dir, "wrong-password")
	if err := os.WriteFile(wrongPW, []byte("not-the-pw-4411\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	full := []string{"ca", c.CA, "cert", c.ClientCert, "key", c.ClientKey, "prefix", "tls-test/", "dial_timeout", "20s"}

	for _, raw := range []string{
		srv.url("root", append(full, "password_file", pwFile)...),
		srv.url("root:"+tlsRootPassword, full...),
		srv.url("root", append(full, "password_file", pwFile, "servername", "localhost")...),
	} {
		s, err := Open(t.Context(), raw)
		if err != nil {
			t.Fatalf("Open(%s): %v", store.RedactString(raw), err)
		}
		key := "k" + time.Now().Format("150405.000000000")
		if err := s.Create(t.Context(), key, map[string]any{"v": 1.0}); err != nil {
			t.Fatal(err)
		}
		if doc, err := s.Get(t.Context(), key); err != nil || doc["v"] != 1.0 {
			t.Fatalf("Get = %v, %v", doc, err)
		}
		s.Close()
	}

	for _, bad := range []struct {
		name  string
		raw   string
		wants []string
	}{
		{"no client certificate", srv.url("root", "ca", c.CA, "password_file", pwFile, "dial_timeout", "2s"), []string{"certificate required", `"cert" and "key"`}},
		{"client certificate of another authority", srv.url("root", "ca", c.CA, "cert", c.OtherCert, "key", c.OtherKey, "password_file", pwFile, "dial_timeout", "2s"), []string{"certificate required", `"cert" and "key"`}},
		{"server of another authority", srv.url("root", "ca", c.OtherCA, "cert", c.ClientCert, "key", c.ClientKey, "password_file", pwFile, "dial_timeout", "2s"), []string{"unknown authority", `URL parameter "ca"`}},
		{"wrong server name", srv.url("root", append(full, "password_file", pwFile, "servername", "etcd.example", "dial_timeout", "2s")...), []string{"etcd.example", `"servername"`}},
		{"no TLS", srv.url("root", "password_file", pwFile, "dial_timeout", "2s"), []string{"connect to http://", "deadline"}},
		{"wrong password", srv.url("root", append(full, "password_file", wrongPW)...), []string{"authentication failed"}},
		{"no password", srv.url("", full...), []string{"permission denied"}},
		{"unreadable CA", srv.url("root", "ca", filepath.Join(c.Dir, "nope.pem"), "password_file", pwFile), []string{`"ca"`, "nope.pem"}},
		{"key of another certificate", srv.url("root", "ca", c.CA, "cert", c.ClientCert, "key", c.OtherKey), []string{`"cert" and "key"`, "does not match"}},
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
			if errors.Is(err, store.ErrNotFound) {
				t.Errorf("error %v is a store sentinel", err)
			}
			assertNoSecret(t, msg, c, tlsRootPassword, "not-the-pw-4411")
		})
	}
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
