package mysql

import (
	"crypto/tls"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/leasehold/leasehold/store/driver"
)

// security is what the URL says of TLS and passwords beyond the driver's own parameters
// (docs/design.md, N1 and N2).
type security struct {
	tls         *tls.Config // nil: whatever the driver's tls parameter says, if anything
	password    string
	hasPassword bool
}

// takeSecurity reads and removes from q, u's query, the TLS parameters every backend shares
// and password_file. The driver's tls parameter is read here when it is true or false, so
// that the name verified is the URL's host (the driver would take it from the address of a
// DSN without one, 127.0.0.1); its other values (skip-verify, preferred, the name of a
// registered configuration) go to the driver, and exclude ca, cert, key and servername.
func takeSecurity(u *url.URL, q url.Values) (*security, error) {
	s := &security{}
	switch v := strings.ToLower(q.Get("tls")); v {
	case "", "true", "1", "false", "0":
		cfg, err := driver.TakeTLS(q)
		if err != nil {
			return nil, err
		}
		if cfg != nil && cfg.ServerName == "" {
			cfg.ServerName = u.Hostname()
		}
		s.tls = cfg
	default:
		for _, p := range driver.TLSParams[1:] {
			if q.Has(p) {
				return nil, fmt.Errorf("URL parameter %q with tls=%s: the TLS parameters %s need tls=true (or no tls parameter)",
					p, q.Get("tls"), strings.Join(slices.Clone(driver.TLSParams[1:]), ", "))
			}
		}
	}
	var err error
	if s.password, s.hasPassword, err = driver.TakePassword(u, q, true); err != nil {
		return nil, err
	}
	return s, nil
}
