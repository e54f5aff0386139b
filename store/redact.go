package store

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A store URL may carry a password, a token or an API key (T4): everything here keeps them out
// of the errors and log lines that name a URL.

// scrub removes from msg, an error of url.Parse about rawURL, what may come from a password.
// The user information is taken as everything between the scheme and the last "@", as meant,
// even when a password holding "/", "?" or "#" made url.Parse end the authority early: it
// then rejects and quotes a piece of that password (`invalid port ":s3c" after host`), so
// any quoted piece found in the password's part of that text (after the user name's colon)
// is hidden too, and the password's whole occurrences. A piece found only in the user name
// (not a secret) is left as it is.
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
	colon := strings.Index(userinfo, ":")
	if colon < 0 {
		return msg // no password
	}
	if colon+1 < len(userinfo) {
		msg = MaskSecrets(msg, []string{userinfo[colon+1:]})
	}
	// inPassword reports whether an occurrence of piece in userinfo overlaps the password.
	inPassword := func(piece string) bool {
		for i := 0; i <= len(userinfo)-len(piece); i++ {
			if strings.HasPrefix(userinfo[i:], piece) && i+len(piece) > colon+1 {
				return true
			}
		}
		return false
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
		if piece, err := strconv.Unquote(q); err == nil && piece != "" && inPassword(piece) {
			q = `"xxxxx"`
		}
		b.WriteString(q)
	}
	b.WriteString(msg)
	return b.String()
}

// MaskSecrets returns msg, free text such as a driver's error, with each whole occurrence of
// each secret replaced by "xxxxx": an occurrence counts unless it is part of a longer word, a
// letter or digit touching it on a side where the secret itself starts or ends with one (a
// password "lh" is hidden in "password lh" or "u:lh@host", not in "localhost"). Secrets are
// tried longest first, so that one holding another is hidden whole. A secret never appears
// as a word of the result; text around it is left as it is. A backend hides with it a secret
// its driver may quote in an error that RedactError does not take for one (store/nats: a
// token written as the URL's user name).
func MaskSecrets(msg string, secrets []string) string {
	secrets = slices.Clone(secrets)
	slices.SortStableFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, s := range secrets {
		if s == "" {
			continue
		}
		first, _ := utf8.DecodeRuneInString(s)
		last, _ := utf8.DecodeLastRuneInString(s)
		var b strings.Builder
		rest := msg
		for {
			i := strings.Index(rest, s)
			if i < 0 {
				break
			}
			var before rune = ' '
			if i > 0 {
				before, _ = utf8.DecodeLastRuneInString(rest[:i])
			} else if b.Len() > 0 {
				before, _ = utf8.DecodeLastRuneInString(b.String())
			}
			after := ' '
			if i+len(s) < len(rest) {
				after, _ = utf8.DecodeRuneInString(rest[i+len(s):])
			}
			embedded := wordRune(before) && wordRune(first) || wordRune(after) && wordRune(last)
			b.WriteString(rest[:i])
			if embedded {
				// Not this occurrence: go on one byte further, an occurrence may overlap it.
				b.WriteString(rest[i : i+1])
				rest = rest[i+1:]
				continue
			}
			b.WriteString("xxxxx")
			rest = rest[i+len(s):]
		}
		b.WriteString(rest)
		msg = b.String()
	}
	return msg
}

// wordRune reports whether r is part of a word: a letter or a digit.
func wordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

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
		for k, vs := range q {
			if secretParam(k) {
				q[k] = []string{"xxxxx"}
				continue
			}
			for i, v := range vs {
				vs[i] = redactNested(v)
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

// redactNested returns v, a query parameter's value, with the password hidden when v is
// itself a URL that carries one (an endpoint=http://user:pw@host parameter).
func redactNested(v string) string {
	if !strings.Contains(v, "@") || !strings.Contains(v, "://") {
		return v
	}
	n, err := url.Parse(v)
	if err != nil {
		return "xxxxx" // it holds an "@" and does not parse: it may be a password's piece
	}
	if _, ok := n.User.Password(); ok {
		n.User = url.UserPassword(n.User.Username(), "xxxxx")
		return n.String()
	}
	return v
}

// tokenUserSchemes are the schemes whose URLs may carry a token as a user without a
// password, which Redact hides too.
var tokenUserSchemes = map[string]bool{"nats": true, "tls": true, "ws": true, "wss": true}

// secretParam reports whether a URL query parameter named name holds a secret that Redact
// hides: its name, lower-cased and without "_" and "-", contains password, passwd, pwd, token,
// secret, auth, credential, apikey, accesskey or privatekey, and does not end in "file" or
// "env" (the path of a file holding a secret, password_file, is not one, nor is the name of an
// environment variable holding one, password_env, and errors name them).
func secretParam(name string) bool {
	n := strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(name))
	if strings.HasSuffix(n, "file") || strings.HasSuffix(n, "env") {
		return false
	}
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
		name, err := url.QueryUnescape(k)
		if err != nil {
			continue
		}
		dv, _ := url.QueryUnescape(v)
		if secretParam(name) {
			add(dv, v)
		} else if n, err := url.Parse(dv); err == nil && strings.Contains(dv, "://") {
			// A parameter that is a URL with a password of its own (endpoint=http://u:pw@h).
			if p, ok := n.User.Password(); ok {
				raw := n.User.String()
				add(p, raw[strings.Index(raw, ":")+1:])
			}
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
	return MaskSecrets(e.err.Error(), e.secrets)
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

// RedactError returns err with the secrets of u hidden from its text (the password, and the
// values of the query parameters [Redact] hides), or err itself when u holds none. errors.Is
// and errors.As see through it. A service that opens a store from a URL wraps the opener's
// error with it, as [Open] does, since a driver's error might quote what it was given.
func RedactError(err error, u *url.URL) error {
	if err == nil || u == nil {
		return err
	}
	return redactError(err, secrets(u))
}
