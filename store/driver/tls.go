package driver

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// TLSParams are the URL query parameters every networked backend reads the same way to build
// its TLS configuration (docs/design.md, N1):
//
//   - tls: "true" to connect with TLS (implied by any of the others), "false" for none.
//   - ca: a PEM file of the certificates of the authorities to trust instead of the system's.
//   - cert, key: PEM files of a client certificate (its chain may follow it) and its private
//     key, for servers that authenticate their clients by certificate. One needs the other.
//   - servername: the name the server's certificate must hold, when it is not the host of the
//     URL (an address, say).
//
// There is no parameter to skip the verification of the server's certificate: give its
// authority with ca instead.
var TLSParams = []string{"tls", "ca", "cert", "key", "servername"}

// TakeTLS reads and removes the TLS parameters from q and returns the configuration they
// describe, or nil when they ask for no TLS (no parameter, or tls=false alone). The files are
// read at once, so that a missing, unreadable or malformed file is an error naming its
// parameter and its path, never quoting what the file holds. The configuration requires TLS
// 1.2 or later; ServerName is set only from servername (the client libraries fill it from the
// host they dial, except where the backend says otherwise).
func TakeTLS(q url.Values) (*tls.Config, error) {
	on, given := false, false
	if q.Has("tls") {
		switch v := strings.ToLower(TakeParam(q, "tls", "")); v {
		case "true", "1":
			on, given = true, true
		case "false", "0":
			given = true
		default:
			return nil, fmt.Errorf("URL parameter \"tls\": %q is not true or false", v)
		}
	}
	ca := TakeParam(q, "ca", "")
	cert := TakeParam(q, "cert", "")
	key := TakeParam(q, "key", "")
	name := TakeParam(q, "servername", "")
	if ca == "" && cert == "" && key == "" && name == "" {
		if !on {
			return nil, nil
		}
		return &tls.Config{MinVersion: tls.VersionTLS12}, nil
	}
	if given && !on {
		return nil, errors.New("URL parameter \"tls\" is false, but ca, cert, key or servername asks for TLS")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: name}
	if ca != "" {
		pool, err := loadCA(ca)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	switch {
	case cert != "" && key == "":
		return nil, fmt.Errorf("URL parameter \"cert\" (%s) needs \"key\", the file of its private key", cert)
	case key != "" && cert == "":
		return nil, fmt.Errorf("URL parameter \"key\" (%s) needs \"cert\", the file of its certificate", key)
	case cert != "":
		pair, err := loadKeyPair(cert, key)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// loadCA reads the PEM certificates of path into a pool.
func loadCA(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("URL parameter \"ca\": %w", pathError(err))
	}
	pool := x509.NewCertPool()
	n := 0
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("URL parameter \"ca\": %s: certificate %d: %v", path, n+1, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("URL parameter \"ca\": %s holds no PEM certificate", path)
	}
	return pool, nil
}

// loadKeyPair reads a certificate and its key. tls.X509KeyPair's errors describe what is wrong
// without quoting the files.
func loadKeyPair(certPath, keyPath string) (tls.Certificate, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("URL parameter \"cert\": %w", pathError(err))
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("URL parameter \"key\": %w", pathError(err))
	}
	if b, _ := pem.Decode(certPEM); b == nil || b.Type != "CERTIFICATE" {
		return tls.Certificate{}, fmt.Errorf("URL parameter \"cert\": %s does not start with a PEM certificate", certPath)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("URL parameters \"cert\" and \"key\" (%s, %s): %v", certPath, keyPath, err)
	}
	return pair, nil
}

// pathError returns a file error as "PATH: reason", the operation left out.
func pathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}
