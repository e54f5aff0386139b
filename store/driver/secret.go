package driver

import (
	"fmt"
	"net/url"
	"os"
	"strings"
)

// PasswordFileParam is the URL query parameter every backend with passwords reads the same way:
// the path of a file holding the password, so that the password is neither in the URL nor in
// a configuration file (docs/design.md, N2). A mounted Kubernetes Secret or a systemd
// credential is such a file.
const PasswordFileParam = "password_file"

// TakeSecretFile reads and removes the URL query parameter name from q, a path, and returns what
// the file holds, less the line ending after its last line. ok is false when q has no such
// parameter. A missing or unreadable file, or an empty one, is an error naming the parameter
// and the path, never quoting what the file holds.
func TakeSecretFile(q url.Values, name string) (secret string, ok bool, err error) {
	if !q.Has(name) {
		return "", false, nil
	}
	path := TakeParam(q, name, "")
	if path == "" {
		return "", false, fmt.Errorf("URL parameter %q is empty: want the path of a file", name)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", false, fmt.Errorf("URL parameter %q: %w", name, pathError(err))
	}
	s := strings.TrimRight(string(data), "\r\n")
	if s == "" {
		return "", false, fmt.Errorf("URL parameter %q: %s is empty", name, path)
	}
	return s, true, nil
}

// TakePassword returns the password of u: the one of its user information, or the one of the
// file named by its password_file parameter, which it removes from q (q being u's query, as the
// backend reads it). Both at once is an error, as is a password file without a user name where
// the backend needs one (needUser).
func TakePassword(u *url.URL, q url.Values, needUser bool) (password string, ok bool, err error) {
	password, ok = "", false
	if u.User != nil {
		password, ok = u.User.Password()
	}
	p, fromFile, err := TakeSecretFile(q, PasswordFileParam)
	if err != nil {
		return "", false, err
	}
	if !fromFile {
		return password, ok, nil
	}
	if ok {
		return "", false, fmt.Errorf("the URL has a password and the URL parameter %q: give one of them", PasswordFileParam)
	}
	if needUser && (u.User == nil || u.User.Username() == "") {
		return "", false, fmt.Errorf("URL parameter %q needs a user name in the URL (scheme://user@host)", PasswordFileParam)
	}
	return p, true, nil
}
