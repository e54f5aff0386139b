package etcd

import (
	"errors"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/leasehold/leasehold/internal/testcerts"
	"github.com/leasehold/leasehold/internal/tlstest"
	"github.com/leasehold/leasehold/store"
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
	return tlstest.URL(url.URL{Scheme: "etcd", Host: s.addr}, user, nil, kv...)
}

// TestTLS runs, on one etcd requiring TLS with client certificates and passwords (N1, N2),
// the round trips and refusals of testTLSOpen, then the conformance suite and the failover test
// over TLS.
func TestTLS(t *testing.T) {
	srv := startTLSEtcd(t)
	tlstest.Run(t, openStore, func(t *testing.T) { testTLSOpen(t, srv) }, func(t *testing.T, name string) string {
		return srv.url("root", append(srv.suiteParams(t), "prefix", "tls-"+name+"/")...)
	})
}

// suiteParams returns the query parameters of the stores of the conformance suite and the
// failover test: the client certificate, the server's authority and the password from a file.
func (s *tlsEtcd) suiteParams(t *testing.T) []string {
	t.Helper()
	c := s.certs
	pwFile := c.Write(t, "suite-password", []byte(tlsRootPassword+"\n"))
	return []string{"ca", c.CA, "cert", c.ClientCert, "key", c.ClientKey, "password_file", pwFile, "dial_timeout", "20s"}
}

// testTLSOpen opens stores over TLS: with the right parameters a round trip works; without the
// client certificate, with another authority, with a wrong server name or a wrong password,
// Open fails, and its error never quotes the password or key material.
func testTLSOpen(t *testing.T, srv *tlsEtcd) {
	c := srv.certs
	pwFile := c.Write(t, "etcd-password", []byte(tlsRootPassword+"\n"))
	wrongPW := c.Write(t, "wrong-password", []byte("not-the-pw-4411\n"))
	full := []string{"ca", c.CA, "cert", c.ClientCert, "key", c.ClientKey, "prefix", "tls-test/", "dial_timeout", "20s"}

	tlstest.RoundTrips(t, openStore,
		srv.url("root", append(full, "password_file", pwFile)...),
		srv.url("root:"+tlsRootPassword, full...),
		srv.url("root", append(full, "password_file", pwFile, "servername", "localhost")...),
	)

	tlstest.Refusals(t, openStore, c, []string{tlsRootPassword, "not-the-pw-4411"}, []tlstest.Refusal{
		tlstest.Refused("no client certificate", srv.url("root", "ca", c.CA, "password_file", pwFile, "dial_timeout", "2s"), "certificate required", `"cert" and "key"`),
		tlstest.Refused("client certificate of another authority", srv.url("root", "ca", c.CA, "cert", c.OtherCert, "key", c.OtherKey, "password_file", pwFile, "dial_timeout", "2s"), "certificate required", `"cert" and "key"`),
		tlstest.Refused("server of another authority", srv.url("root", "ca", c.OtherCA, "cert", c.ClientCert, "key", c.ClientKey, "password_file", pwFile, "dial_timeout", "2s"), "unknown authority", `URL parameter "ca"`),
		tlstest.Refused("wrong server name", srv.url("root", append(full, "password_file", pwFile, "servername", "etcd.example", "dial_timeout", "2s")...), "etcd.example", `"servername"`),
		tlstest.Refused("no TLS", srv.url("root", "password_file", pwFile, "dial_timeout", "2s"), "connect to http://", "deadline"),
		tlstest.Refused("wrong password", srv.url("root", append(full, "password_file", wrongPW)...), "authentication failed"),
		tlstest.Refused("no password", srv.url("", full...), "permission denied"),
		tlstest.Refused("unreadable CA", srv.url("root", "ca", filepath.Join(c.Dir, "nope.pem"), "password_file", pwFile), `"ca"`, "nope.pem"),
		tlstest.Refused("key of another certificate", srv.url("root", "ca", c.CA, "cert", c.ClientCert, "key", c.OtherKey), `"cert" and "key"`, "does not match"),
	})

	// C7: refused credentials stop a start; waiting does not cure them.
	for name, raw := range map[string]string{
		"wrong password": srv.url("root", append(full, "password_file", wrongPW)...),
		"no password":    srv.url("", full...),
	} {
		_, err := openStore(t.Context(), raw)
		if !errors.Is(err, store.ErrConfig) {
			t.Errorf("C7: %s: the error is not a configuration error (store.ErrConfig): %v", name, err)
		}
	}
}
