package store

import "net/url"

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
