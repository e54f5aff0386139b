// Package testcerts makes the certificates of the TLS tests: a private authority, a server
// certificate for 127.0.0.1 and localhost and a client certificate signed by it, and a second,
// unrelated authority, written as PEM files in a test's temporary directory.
package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// Set is the paths of the PEM files New wrote.
type Set struct {
	Dir        string
	CA         string // the authority that signed the server and client certificates
	ServerCert string // for 127.0.0.1, ::1 and localhost
	ServerKey  string
	ClientCert string // common name "leasehold-client"
	ClientKey  string
	OtherCA    string // an authority that signed neither
	OtherCert  string // a client certificate signed by OtherCA
	OtherKey   string
}

// New writes a fresh set of certificates under t.TempDir().
func New(t testing.TB) *Set {
	t.Helper()
	dir := t.TempDir()
	s := &Set{Dir: dir}
	ca, caKey := authority(t, "leasehold test CA")
	other, otherKey := authority(t, "unrelated test CA")
	s.CA = writeCert(t, dir, "ca.pem", ca)
	s.OtherCA = writeCert(t, dir, "other-ca.pem", other)

	srv, srvKey := leaf(t, ca, caKey, "localhost", x509.ExtKeyUsageServerAuth)
	s.ServerCert = writeCert(t, dir, "server.pem", srv)
	s.ServerKey = writeKey(t, dir, "server-key.pem", srvKey)
	cl, clKey := leaf(t, ca, caKey, "leasehold-client", x509.ExtKeyUsageClientAuth)
	s.ClientCert = writeCert(t, dir, "client.pem", cl)
	s.ClientKey = writeKey(t, dir, "client-key.pem", clKey)
	oc, ocKey := leaf(t, other, otherKey, "leasehold-client", x509.ExtKeyUsageClientAuth)
	s.OtherCert = writeCert(t, dir, "other-client.pem", oc)
	s.OtherKey = writeKey(t, dir, "other-client-key.pem", ocKey)
	return s
}

// Write writes data to name in the set's directory and returns its path.
func (s *Set) Write(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(s.Dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

var serial atomic.Int64

func template(cn string) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano() + serial.Add(1)),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"leasehold tests"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
}

func authority(t testing.TB, cn string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key := newKey(t)
	tpl := template(cn)
	tpl.IsCA = true
	tpl.BasicConstraintsValid = true
	tpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	return sign(t, tpl, tpl, key, key), key
}

func leaf(t testing.TB, ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string, usage x509.ExtKeyUsage) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key := newKey(t)
	tpl := template(cn)
	tpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	// Servers that check their clients (etcd) also dial with their own certificate.
	tpl.ExtKeyUsage = []x509.ExtKeyUsage{usage, x509.ExtKeyUsageClientAuth}
	if usage == x509.ExtKeyUsageServerAuth {
		tpl.DNSNames = []string{"localhost"}
		tpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
	}
	return sign(t, tpl, ca, key, caKey), key
}

// sign returns the certificate of tpl for key, signed by parent's signerKey.
func sign(t testing.TB, tpl, parent *x509.Certificate, key, signerKey *ecdsa.PrivateKey) *x509.Certificate {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tpl, parent, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func writeCert(t testing.TB, dir, name string, c *x509.Certificate) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeKey(t testing.TB, dir, name string, k *ecdsa.PrivateKey) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// KeyMaterial returns the base64 lines of the PEM file at path (without its BEGIN and END
// lines), for tests asserting that no output quotes a key.
func KeyMaterial(t testing.TB, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		enc := pem.EncodeToMemory(&pem.Block{Type: b.Type, Bytes: b.Bytes})
		lines := splitLines(string(enc))
		for _, l := range lines[1 : len(lines)-1] {
			if len(l) >= 16 {
				out = append(out, l)
			}
		}
	}
	return out
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
