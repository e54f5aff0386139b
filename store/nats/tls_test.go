package nats

import (
	"fmt"
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

	"github.com/leasehold/leasehold/internal/testcerts"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/internal/tlstest"
)

const natsServerBin = "/usr/sbin/nats-server"

// tlsNATS is a nats-server process with JetStream, requiring TLS with a client certificate
// signed by certs.CA, and one of two users: an nkey user, and "app" with password
// natsAppPassword.
type tlsNATS struct {
	addr     string
	certs    *testcerts.Set
	nkeyFile string // the nkey user's private key file
	nkeySeed string // what it holds: a secret
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
	return &tlsNATS{addr: runNATSServer(t, bin, dir, conf), certs: certs, nkeyFile: nkeyFile, nkeySeed: string(priv)}
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
	addr := ""
	log, err := tlstest.AwaitReady(stderr, "nats-server", 30*time.Second, func(line string) bool {
		if m := listening.FindStringSubmatch(line); m != nil {
			addr = m[1]
		}
		return strings.Contains(line, "Server is ready")
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if addr == "" {
		t.Fatal("nats-server did not say its client port")
	}
	return addr
}

func (s *tlsNATS) url(user string, kv ...string) string {
	return tlstest.URL(url.URL{Scheme: "nats", Host: s.addr}, user, url.Values{"storage": {"memory"}, "dial_timeout": {"10s"}}, kv...)
}

// TestTLS runs, on one nats-server requiring TLS with client certificates and nkey or password
// authentication (N1, N2), the round trips and refusals of testTLSOpen, then the conformance
// suite and the failover test over TLS.
func TestTLS(t *testing.T) {
	srv := startTLSNATS(t)
	tlstest.Run(t, openStore, func(t *testing.T) { testTLSOpen(t, srv) }, func(t *testing.T, name string) string {
		return srv.suiteURL(t, "tls_"+name).String()
	})
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

// testTLSOpen opens stores over TLS with the right parameters and does a round trip with each,
// and checks that Open fails without them, quoting no secret.
func testTLSOpen(t *testing.T, srv *tlsNATS) {
	c := srv.certs
	pwFile := c.Write(t, "app-password", []byte(natsAppPassword+"\n"))
	wrongPW := c.Write(t, "wrong-password", []byte("not-the-nats-pw-5120\n"))
	tlsParams := []string{"ca", c.CA, "cert", c.ClientCert, "key", c.ClientKey}

	tlstest.RoundTrips(t, openStore,
		srv.url("", append(tlsParams, "nkey", srv.nkeyFile, "bucket", "tls_nkey")...),
		srv.url("app", append(tlsParams, "password_file", pwFile, "bucket", "tls_pwfile")...),
		srv.url("app:"+natsAppPassword, append(tlsParams, "bucket", "tls_pw")...),
		srv.url("", append(tlsParams, "nkey", srv.nkeyFile, "bucket", "tls_name", "servername", "localhost")...),
	)

	tlstest.Refusals(t, openStore, c, []string{srv.nkeySeed, natsAppPassword, "not-the-nats-pw-5120"}, []tlstest.Refusal{
		tlstest.Refused("no client certificate", srv.url("", "ca", c.CA, "nkey", srv.nkeyFile), `"cert" and "key"`),
		tlstest.Refused("client certificate of another authority", srv.url("", "ca", c.CA, "cert", c.OtherCert, "key", c.OtherKey, "nkey", srv.nkeyFile), `"cert" and "key"`),
		tlstest.Refused("server of another authority", srv.url("", "ca", c.OtherCA, "cert", c.ClientCert, "key", c.ClientKey, "nkey", srv.nkeyFile), "unknown authority", `URL parameter "ca"`),
		tlstest.Refused("wrong server name", srv.url("", append(tlsParams, "nkey", srv.nkeyFile, "servername", "nats.example")...), "nats.example", `"servername"`),
		tlstest.Refused("no TLS parameters", srv.url("", "nkey", srv.nkeyFile), "certificate"),
		tlstest.Refused("wrong password", srv.url("app", append(tlsParams, "password_file", wrongPW)...), "Authorization Violation"),
		tlstest.Refused("no credentials", srv.url("", tlsParams...), "Authorization Violation"),
		tlstest.Refused("password twice", srv.url("app:x", append(tlsParams, "password_file", pwFile)...), `"password_file"`),
		tlstest.Refused("nkey and password", srv.url("app", append(tlsParams, "password_file", pwFile, "nkey", srv.nkeyFile)...), "credentials given twice"),
		tlstest.Refused("nkey file missing", srv.url("", append(tlsParams, "nkey", filepath.Join(c.Dir, "none.nk"))...), `"nkey"`, "none.nk", "no such file"),
		tlstest.Refused("nkey file of another kind", srv.url("", append(tlsParams, "nkey", c.ClientKey)...), `"nkey"`, c.ClientKey),
		tlstest.Refused("creds file missing", srv.url("", append(tlsParams, "creds", filepath.Join(c.Dir, "none.creds"))...), `"creds"`, "none.creds"),
		tlstest.Refused("creds file of another kind", srv.url("", append(tlsParams, "creds", c.CA)...), `"creds"`, c.CA, "not a NATS credentials file"),
		tlstest.Refused("password file missing", srv.url("app", append(tlsParams, "password_file", filepath.Join(c.Dir, "none"))...), `"password_file"`, "none"),
	})
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

	tlstest.RoundTrips(t, openStore, natsURL("", append(tlsParams, "creds", srv.creds, "bucket", "tls_creds")...))

	tlstest.Refusals(t, openStore, c, append(srv.userKeys, natsAppPassword, "PRIVATE KEY", "USER NKEY"), []tlstest.Refusal{
		tlstest.Refused("account unknown to the server", natsURL("", append(tlsParams, "creds", srv.unknownCreds)...), "Authorization Violation"),
		tlstest.Refused("no credentials", natsURL("", tlsParams...), "Authorization Violation"),
		tlstest.Refused("password instead", natsURL("app:"+natsAppPassword, tlsParams...), "Authorization Violation"),
		tlstest.Refused("creds without TLS", natsURL("", "creds", srv.creds), "unknown authority"),
	})
}
