package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// OpenFunc opens a store from a parsed URL. The URL may carry credentials: an OpenFunc must
// never put them in an error or a log line (use [Redact]).
type OpenFunc func(ctx context.Context, u *url.URL) (Store, error)

var (
	openersMu sync.RWMutex
	openers   = map[string]OpenFunc{}
)

// RegisterOpener makes Open handle URLs of the given scheme. Backends call it from init. It
// panics when the scheme is empty or already registered, as two backends claiming one scheme
// is a programming error.
func RegisterOpener(scheme string, open OpenFunc) {
	scheme = strings.ToLower(scheme)
	if scheme == "" || open == nil {
		panic("store: RegisterOpener with an empty scheme or a nil OpenFunc")
	}
	openersMu.Lock()
	defer openersMu.Unlock()
	if _, dup := openers[scheme]; dup {
		panic(fmt.Sprintf("store: RegisterOpener called twice for scheme %q", scheme))
	}
	openers[scheme] = open
}

// Schemes returns the registered URL schemes, sorted.
func Schemes() []string {
	openersMu.RLock()
	defer openersMu.RUnlock()
	out := make([]string, 0, len(openers))
	for s := range openers {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Open opens the store named by rawURL through the opener registered for its scheme. Import a
// backend's package (for its init) to register its scheme; the core module registers mem and
// file when package leasehold or the memory and file packages are imported. The returned store
// may hold connections: close it with [Close] when done.
func Open(ctx context.Context, rawURL string) (Store, error) {
	u, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	openersMu.RLock()
	open, ok := openers[strings.ToLower(u.Scheme)]
	openersMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("store: unknown URL scheme %q in %s (known: %s)",
			u.Scheme, Redact(u), strings.Join(Schemes(), ", "))
	}
	s, err := open(ctx, u)
	if err != nil {
		// The opener should not quote its URL's secrets, but a driver's error might: hide them
		// here too, keeping the error itself reachable with errors.Is and errors.As.
		return nil, fmt.Errorf("store: open %s: %w", Redact(u), redactError(err, secrets(u)))
	}
	return s, nil
}

// ParseURL parses a store URL. Unlike url.Parse, its errors never quote the URL, which may hold
// a password.
func ParseURL(rawURL string) (*url.URL, error) {
	if rawURL == "" {
		return nil, errors.New("store: empty URL")
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("store: invalid URL: %v", scrub(err.Error(), rawURL))
	}
	if u.Scheme == "" {
		return nil, fmt.Errorf("store: URL %s has no scheme (known: %s)", Redact(u), strings.Join(Schemes(), ", "))
	}
	return u, nil
}

// scrub removes from msg, an error of url.Parse about rawURL, what may come from a password.
// The user information is taken as everything between the scheme and the last "@", as meant,
// even when a password holding "/", "?" or "#" made url.Parse end the authority early: it
// then rejects and quotes a piece of that password (`invalid port ":s3c" after host`), so
// any quoted piece found in that text is hidden too.
func scrub(msg, rawURL string) string {
	start := strings.Index(rawURL, "://")
	if start >= 0 {
		start += 3
	} else {
		start = strings.Index(rawURL, ":") + 1
	}
	at := strings.LastIndex(rawURL, "@")
	if at < start {
		return msg
	}
	userinfo := rawURL[start:at]
	if colon := strings.Index(userinfo, ":"); colon >= 0 && colon+1 < len(userinfo) {
		msg = strings.ReplaceAll(msg, userinfo[colon+1:], "xxxxx")
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(msg, '"')
		if i < 0 {
			break
		}
		b.WriteString(msg[:i])
		q, err := strconv.QuotedPrefix(msg[i:])
		if err != nil {
			b.WriteByte('"')
			msg = msg[i+1:]
			continue
		}
		msg = msg[i+len(q):]
		if piece, err := strconv.Unquote(q); err == nil && piece != "" && strings.Contains(userinfo, piece) {
			q = `"xxxxx"`
		}
		b.WriteString(q)
	}
	b.WriteString(msg)
	return b.String()
}

// Redact returns u as a string with its password replaced by "xxxxx", and with the values of
// query parameters that commonly hold secrets (password, token, secret, auth, credential, API
// and access keys) hidden too. A URL that only parsed because a password was not escaped
// ("user:pass@host/db" without "//", or a password holding "/") has the text before its last
// "@" hidden.
func Redact(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	if c.RawQuery != "" {
		q := c.Query()
		for k := range q {
			if secretParam(k) {
				q[k] = []string{"xxxxx"}
			}
		}
		c.RawQuery = q.Encode()
	}
	if at := strings.LastIndex(c.Opaque, "@"); at >= 0 {
		c.Opaque = "xxxxx" + c.Opaque[at:]
	}
	if c.User != nil {
		if _, hasPassword := c.User.Password(); !hasPassword && tokenUserSchemes[strings.ToLower(c.Scheme)] {
			// nats://TOKEN@host: the user part is the secret.
			c.User = url.User("xxxxx")
		}
	}
	// "postgres://u:12/34@host/db" parses as host "u:12" and path "/34@host/db".
	if p := c.EscapedPath(); c.User == nil && strings.Contains(c.Host, ":") && strings.Contains(p, "@") {
		out := c.Scheme + "://xxxxx@" + p[strings.LastIndex(p, "@")+1:]
		if c.RawQuery != "" {
			out += "?" + c.RawQuery
		}
		if c.Fragment != "" {
			out += "#" + c.EscapedFragment()
		}
		return out
	}
	return c.Redacted()
}

// tokenUserSchemes are the schemes whose URLs may carry a token as a user without a
// password, which Redact hides too.
var tokenUserSchemes = map[string]bool{"nats": true, "tls": true, "ws": true, "wss": true}

// secretParam reports whether a URL query parameter named name holds a secret that Redact
// hides: its name, lower-cased and without "_" and "-", contains password, passwd, pwd, token,
// secret, auth, credential, apikey, accesskey or privatekey.
func secretParam(name string) bool {
	n := strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(name))
	for _, s := range []string{"password", "passwd", "pwd", "token", "secret", "auth", "credential", "apikey", "accesskey", "privatekey"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// secrets returns the secrets u carries, as they may appear in a driver's error: the password
// and the values of secret query parameters, decoded and as written.
func secrets(u *url.URL) []string {
	var out []string
	add := func(decoded, raw string) {
		for _, s := range []string{decoded, raw} {
			if s != "" && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	if p, ok := u.User.Password(); ok {
		raw := u.User.String()
		add(p, raw[strings.Index(raw, ":")+1:])
	}
	for _, pair := range strings.Split(u.RawQuery, "&") {
		k, v, _ := strings.Cut(pair, "=")
		if name, err := url.QueryUnescape(k); err == nil && secretParam(name) {
			dv, _ := url.QueryUnescape(v)
			add(dv, v)
		}
	}
	// Longest first, so that a secret containing another is hidden whole.
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// redactError returns err, or when there are secrets, err with them hidden from its text.
func redactError(err error, secrets []string) error {
	if len(secrets) == 0 {
		return err
	}
	return &redactedError{err: err, secrets: secrets}
}

type redactedError struct {
	err     error
	secrets []string
}

func (e *redactedError) Error() string {
	msg := e.err.Error()
	for _, s := range e.secrets {
		msg = strings.ReplaceAll(msg, s, "xxxxx")
	}
	return msg
}

func (e *redactedError) Unwrap() error { return e.err }

// RedactString is Redact for a raw URL; an unparsable URL is reduced to its scheme.
func RedactString(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		if i := strings.Index(rawURL, "://"); i > 0 {
			return rawURL[:i] + "://…"
		}
		return "<invalid URL>"
	}
	return Redact(u)
}

// Close closes s if it holds resources (implements interface{ Close() error }).
func Close(s Store) error {
	if c, ok := s.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}
