package driver

import (
	"github.com/leasehold/leasehold/store"

	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

// VerifyServerNameItself makes cfg verify the server's certificate for cfg.ServerName by
// itself, for a client library that sets the server name it verifies from the address it
// dials, overriding the configuration's (gRPC does). The library's own check is turned off
// (InsecureSkipVerify) and replaced by VerifyConnection, which verifies the chain against
// cfg.RootCAs (the system's when nil) for that name, as crypto/tls would; nothing goes
// unverified. It does nothing when cfg has no ServerName.
func VerifyServerNameItself(cfg *tls.Config) {
	if cfg == nil || cfg.ServerName == "" {
		return
	}
	name, roots := cfg.ServerName, cfg.RootCAs
	cfg.InsecureSkipVerify = true
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("tls: the server sent no certificate")
		}
		opts := x509.VerifyOptions{DNSName: name, Roots: roots, Intermediates: x509.NewCertPool()}
		for _, c := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(opts)
		return err
	}
}

// ProbeTLS connects to addr (host:port) with cfg and returns why a TLS session fails, or nil
// when it does not: for a backend whose client library reports a failed connection without
// its cause (a deadline, say), so that its error can say what is wrong and which URL parameter
// to look at. After the handshake it waits a moment for the server's verdict on the client's
// certificate, which TLS 1.3 sends after it.
func ProbeTLS(ctx context.Context, addr string, cfg *tls.Config) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	c := cfg.Clone()
	if c.ServerName == "" && !c.InsecureSkipVerify {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			c.ServerName = host
		}
	}
	d := tls.Dialer{Config: c}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return ExplainTLS(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var b [1]byte
	if _, err := conn.Read(b[:]); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, io.EOF) {
		return ExplainTLS(err)
	}
	return nil
}

// ExplainTLS returns err, a failed TLS session's, with the URL parameter that likely fixes it
// named after it.
func ExplainTLS(err error) error {
	if err == nil {
		return nil
	}
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	// Client libraries do not all wrap the errors of crypto/tls: their texts are read too.
	msg := err.Error()
	switch {
	case errors.As(err, &ua) || strings.Contains(msg, "certificate signed by unknown authority"):
		return store.ConfigError(fmt.Errorf("%w (the server's certificate is not signed by an authority of the URL parameter \"ca\", or of the system when there is none)", err))
	case errors.As(err, &hn) || strings.Contains(msg, "x509: certificate is valid for") || strings.Contains(msg, "x509: cannot validate certificate"):
		return store.ConfigError(fmt.Errorf("%w (the URL parameter \"servername\" sets the name to verify)", err))
	case errors.As(err, &ci) || strings.Contains(msg, "x509: certificate has expired") || strings.Contains(msg, "x509: certificate is not"):
		return store.ConfigError(fmt.Errorf("%w (the server's certificate)", err))
	case strings.Contains(msg, "certificate required") || strings.Contains(msg, "bad certificate") ||
		strings.Contains(msg, "unknown certificate authority") || strings.Contains(msg, "closed by remote after TLS handshake"):
		return fmt.Errorf("%w (the server refused the client certificate, or wants one: URL parameters \"cert\" and \"key\")", err)
	case strings.Contains(msg, "first record does not look like a TLS handshake"):
		return store.ConfigError(fmt.Errorf("%w (the server does not speak TLS on this port)", err))
	}
	return err
}

// ExplainTLSFailure is ExplainTLS for a failed connection to addr with cfg (nil: no TLS, err
// returned as it is), probing the TLS session with ProbeTLS when err itself says nothing of
// TLS: a server that refuses a client certificate may just reset the connection.
func ExplainTLSFailure(ctx context.Context, addr string, cfg *tls.Config, err error) error {
	if err == nil || cfg == nil {
		return err
	}
	if e := ExplainTLS(err); e != err {
		return e
	}
	if perr := ProbeTLS(context.WithoutCancel(ctx), addr, cfg); perr != nil {
		return fmt.Errorf("%w; TLS with %s: %v", err, addr, perr)
	}
	return err
}
