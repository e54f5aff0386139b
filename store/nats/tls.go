package nats

import (
	"fmt"
	"net/url"
	"os"
	"strings"

	natsgo "github.com/nats-io/nats.go"

	"github.com/leasehold/leasehold/store/driver"
)

// securityParams are the URL parameters of TLS and credentials (docs/design.md, N1 and N2).
var securityParams = append([]string{"creds", "nkey", "token_file", driver.PasswordFileParam}, driver.TLSParams...)

// securityOptions reads and removes from q the parameters of TLS and credentials, and returns
// the client's options for them, with the user information the server URLs carry (none when the
// credentials come from a file: a password or token of the URL stays in the URL). At most one
// kind of credentials: the URL's user information, creds, nkey or token_file.
func securityOptions(u *url.URL, q url.Values) (*url.Userinfo, []natsgo.Option, error) {
	var opts []natsgo.Option
	tlsConfig, err := driver.TakeTLS(q)
	if err != nil {
		return nil, nil, fmt.Errorf("store/nats: %w", err)
	}
	if tlsConfig != nil {
		opts = append(opts, natsgo.Secure(tlsConfig))
	}

	var kinds []string
	if u.User != nil {
		kinds = append(kinds, "the URL's user information")
	}
	for _, p := range []string{"creds", "nkey", "token_file"} {
		if q.Has(p) {
			kinds = append(kinds, "URL parameter "+fmt.Sprintf("%q", p))
		}
	}
	if q.Has(driver.PasswordFileParam) && u.User == nil {
		return nil, nil, fmt.Errorf("store/nats: URL parameter %q needs a user name in the URL (nats://user@host)", driver.PasswordFileParam)
	}
	if len(kinds) > 1 {
		return nil, nil, fmt.Errorf("store/nats: credentials given twice (%s): give one", strings.Join(kinds, ", "))
	}

	user := u.User
	if pw, ok, err := driver.TakeSecretFile(q, driver.PasswordFileParam); err != nil {
		return nil, nil, fmt.Errorf("store/nats: %w", err)
	} else if ok {
		if _, inURL := u.User.Password(); inURL || u.User.Username() == "" {
			return nil, nil, fmt.Errorf("store/nats: URL parameter %q needs a user name in the URL and no password (nats://user@host)", driver.PasswordFileParam)
		}
		// The client sends them; the server URLs carry no user.
		opts = append(opts, natsgo.UserInfo(u.User.Username(), pw))
		user = nil
	}
	if token, ok, err := driver.TakeSecretFile(q, "token_file"); err != nil {
		return nil, nil, fmt.Errorf("store/nats: %w", err)
	} else if ok {
		opts = append(opts, natsgo.Token(token))
	}
	if path := driver.TakeParam(q, "creds", ""); path != "" {
		if err := checkCreds(path); err != nil {
			return nil, nil, err
		}
		opts = append(opts, natsgo.UserCredentials(path))
	}
	if path := driver.TakeParam(q, "nkey", ""); path != "" {
		if _, err := os.Stat(path); err != nil {
			return nil, nil, fmt.Errorf("store/nats: URL parameter \"nkey\": %v", err)
		}
		o, err := natsgo.NkeyOptionFromSeed(path)
		if err != nil {
			// Its errors may name the key's kind in the client's words; say it in ours.
			return nil, nil, fmt.Errorf("store/nats: URL parameter \"nkey\": %s holds no NATS user nkey (the private key line of `nk -gen user`, starting with SU)", path)
		}
		opts = append(opts, o)
	}
	return user, opts, nil
}

// checkCreds checks that path is a readable credentials file (a user JWT and its key, as `nsc`
// writes them): the client reads it only when it connects, and would then fail without
// naming the parameter.
func checkCreds(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("store/nats: URL parameter \"creds\": %v", err)
	}
	defer clear(data)
	if !strings.Contains(string(data), "BEGIN NATS USER JWT") {
		return fmt.Errorf("store/nats: URL parameter \"creds\": %s is not a NATS credentials file (no user JWT in it)", path)
	}
	return nil
}
