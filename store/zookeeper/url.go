package zookeeper

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/leasehold/leasehold/store/driver"
)

// DefaultChroot is the znode under which the records live when the URL has no path.
const DefaultChroot = "/leasehold"

// DefaultSessionTimeout is the session timeout asked of the servers when the URL has no
// session_timeout parameter.
const DefaultSessionTimeout = 10 * time.Second

// PasswordEnvParam names the URL parameter that names the environment variable holding the
// digest password.
const PasswordEnvParam = "password_env"

var knownParams = append([]string{"session_timeout", "dial_timeout", "acl", driver.PasswordFileParam, PasswordEnvParam}, driver.TLSParams...)

// config is what a store URL asks for.
type config struct {
	servers        []string
	chroot         string // "/a/b", never "/" or a trailing slash
	sessionTimeout time.Duration
	dialTimeout    time.Duration
	user, password string // digest credentials; user "" for none
	acl            []zk.ACL
	tls            *tls.Config
}

// parseConfig reads a store URL. Its errors never hold the password.
func parseConfig(u *url.URL) (*config, error) {
	if !strings.EqualFold(u.Scheme, "zk") {
		return nil, fmt.Errorf("store/zookeeper: URL scheme %q is not zk", u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" {
		return nil, errors.New("store/zookeeper: the URL names no server (zk://host:port[,host:port]/chroot)")
	}
	c := &config{sessionTimeout: DefaultSessionTimeout, dialTimeout: 5 * time.Second}
	for _, h := range strings.Split(u.Host, ",") {
		if h == "" {
			return nil, fmt.Errorf("store/zookeeper: empty server address in %q", u.Host)
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(h, "2181")
		}
		c.servers = append(c.servers, h)
	}
	chroot, err := parseChroot(u.Path)
	if err != nil {
		return nil, err
	}
	c.chroot = chroot
	q := u.Query()
	for k := range q {
		if !slices.Contains(knownParams, k) {
			return nil, fmt.Errorf("store/zookeeper: unknown URL parameter %q (known: %s)", k, strings.Join(knownParams, ", "))
		}
	}
	for name, d := range map[string]*time.Duration{"session_timeout": &c.sessionTimeout, "dial_timeout": &c.dialTimeout} {
		if !q.Has(name) {
			continue
		}
		v := driver.TakeParam(q, name, "")
		x, err := time.ParseDuration(v)
		if err != nil || x <= 0 {
			return nil, fmt.Errorf("store/zookeeper: URL parameter %q: %q is not a positive duration such as \"10s\"", name, v)
		}
		*d = x
	}
	if c.sessionTimeout < time.Millisecond {
		return nil, fmt.Errorf("store/zookeeper: URL parameter \"session_timeout\": %v is under a millisecond", c.sessionTimeout)
	}
	if c.tls, err = driver.TakeTLS(q); err != nil {
		return nil, fmt.Errorf("store/zookeeper: %w", err)
	}
	if err := c.takeCredentials(u, q); err != nil {
		return nil, fmt.Errorf("store/zookeeper: %w", err)
	}
	acl := driver.TakeParam(q, "acl", "open")
	switch acl {
	case "open":
		c.acl = zk.WorldACL(zk.PermAll)
	case "creator":
		c.acl = zk.AuthACL(zk.PermAll)
	case "creator_read":
		c.acl = append(zk.AuthACL(zk.PermAll), zk.WorldACL(zk.PermRead)...)
	default:
		return nil, fmt.Errorf("store/zookeeper: URL parameter \"acl\": %q is not open, creator or creator_read", acl)
	}
	if acl != "open" && c.user == "" {
		return nil, fmt.Errorf("store/zookeeper: URL parameter \"acl\"=%s needs digest credentials (zk://user@host/...?%s=... or %s=...)", acl, driver.PasswordFileParam, PasswordEnvParam)
	}
	return c, nil
}

// parseChroot returns the chroot of a URL's path: DefaultChroot for none, else the path
// without a trailing slash, refused when ZooKeeper would refuse it.
func parseChroot(p string) (string, error) {
	if p == "" || p == "/" {
		return DefaultChroot, nil
	}
	p = strings.TrimSuffix(p, "/")
	if path.Clean(p) != p || strings.Contains(p, "//") {
		return "", fmt.Errorf("store/zookeeper: URL path %q is not a clean znode path such as /leasehold/app", p)
	}
	for _, part := range strings.Split(p[1:], "/") {
		if part == "." || part == ".." || part == "" {
			return "", fmt.Errorf("store/zookeeper: URL path %q: %q is not a znode name", p, part)
		}
		for _, r := range part {
			if r == 0 || r < 0x20 || r >= 0x7f && r <= 0x9f || r >= 0xd800 && r <= 0xf8ff || r >= 0xfff0 {
				return "", fmt.Errorf("store/zookeeper: URL path %q holds a character ZooKeeper refuses in a znode name (%U)", p, r)
			}
		}
	}
	if p == "/zookeeper" || strings.HasPrefix(p, "/zookeeper/") {
		return "", fmt.Errorf("store/zookeeper: URL path %q is under /zookeeper, which the servers keep for themselves", p)
	}
	return p, nil
}

// takeCredentials reads the digest credentials: the user of the URL, and its password from the
// file of password_file or the environment variable of password_env, never from the URL
// itself, which is written in configuration files and logs.
func (c *config) takeCredentials(u *url.URL, q url.Values) error {
	if _, ok := u.User.Password(); ok {
		return fmt.Errorf("the URL holds a password: give it in a file (%s) or an environment variable (%s) instead", driver.PasswordFileParam, PasswordEnvParam)
	}
	env := driver.TakeParam(q, PasswordEnvParam, "")
	password, fromFile, err := driver.TakeSecretFile(q, driver.PasswordFileParam)
	if err != nil {
		return err
	}
	if fromFile && env != "" {
		return fmt.Errorf("URL parameters %q and %q both give the password: give one of them", driver.PasswordFileParam, PasswordEnvParam)
	}
	user := u.User.Username()
	has := fromFile || env != ""
	switch {
	case has && user == "":
		return fmt.Errorf("the password needs a user name in the URL (zk://user@host/...)")
	case !has && user != "":
		return fmt.Errorf("the URL names the user %q but no password: give it with %s or %s", user, driver.PasswordFileParam, PasswordEnvParam)
	}
	if env != "" {
		if !validEnvName(env) {
			return fmt.Errorf("URL parameter %q: %q is not an environment variable name", PasswordEnvParam, env)
		}
		v, ok := os.LookupEnv(env)
		if !ok || v == "" {
			return fmt.Errorf("URL parameter %q: the environment variable %s is unset or empty", PasswordEnvParam, env)
		}
		password = v
	}
	if strings.Contains(user, ":") {
		return fmt.Errorf("the user name %q holds a colon, which digest credentials cannot", user)
	}
	c.user, c.password = user, password
	return nil
}

func validEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}
