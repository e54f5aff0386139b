package redis

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/leasehold/leasehold/store/driver"
)

// security is what the URL says of TLS and credentials beyond what go-redis reads itself
// (docs/design.md, N1 and N2): the TLS parameters every backend shares, which also apply to a
// redis:// URL, and password_file.
type security struct {
	tls         *tls.Config // nil: go-redis's own (TLS for rediss://, none for redis://)
	tlsOff      bool        // tls=false
	password    string
	hasPassword bool
}

// takeSecurity reads and removes those parameters from q, u's query.
func takeSecurity(u *url.URL, q url.Values) (*security, error) {
	s := &security{tlsOff: q.Has("tls") && (strings.EqualFold(q.Get("tls"), "false") || q.Get("tls") == "0")}
	var err error
	if s.tls, err = driver.TakeTLS(q); err != nil {
		return nil, fmt.Errorf("store/redis: %w", err)
	}
	if s.tlsOff && strings.EqualFold(u.Scheme, "rediss") {
		return nil, errors.New("store/redis: URL parameter \"tls\" is false, but the scheme rediss is TLS")
	}
	if s.tls != nil && q.Has("skip_verify") {
		return nil, errors.New("store/redis: URL parameter \"skip_verify\" with TLS parameters: give the server's authority with \"ca\" instead")
	}
	if s.password, s.hasPassword, err = driver.TakePassword(u, q, false); err != nil {
		return nil, fmt.Errorf("store/redis: %w", err)
	}
	return s, nil
}

// apply sets the options go-redis parsed from the URL.
func (s *security) apply(opts *goredis.Options) {
	if s.tls != nil {
		if s.tls.ServerName == "" && opts.TLSConfig != nil {
			s.tls.ServerName = opts.TLSConfig.ServerName
		}
		opts.TLSConfig = s.tls
	}
	if s.hasPassword {
		opts.Password = s.password
	}
}
