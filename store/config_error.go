package store

import "errors"

// ErrConfig is in the chain of an Open error that waiting cannot cure: the URL or what it
// names is wrong (an unknown scheme or parameter, a value out of range, a file it names that
// cannot be read, a TLS setting that cannot work) or the server refused the credentials. An
// Open error without it (a server that cannot be reached, does not answer in time or is not
// ready yet) may succeed later: a caller starting with its store may keep trying (see
// [NotReady]).
var ErrConfig = errors.New("store: bad configuration")

// ConfigError returns err, with its text, and ErrConfig in its chain too; nil for nil. A
// backend's OpenFunc wraps with it the errors that retrying cannot cure (a bad parameter,
// refused credentials), so that its callers stop at once instead of trying again.
func ConfigError(err error) error {
	if err == nil || errors.Is(err, ErrConfig) {
		return err
	}
	return configError{err}
}

// configError is err, whose text it keeps, with ErrConfig in its chain too.
type configError struct{ err error }

func (e configError) Error() string        { return e.err.Error() }
func (e configError) Unwrap() error        { return e.err }
func (e configError) Is(target error) bool { return target == ErrConfig }

// NotReady reports whether err, an Open's error, may go away by itself: it is not nil and
// neither ErrConfig nor ErrInvalid is in its chain. A program that opens its store as it starts
// (as the URLStore services do) keeps trying while it reports true, and fails at once
// otherwise.
func NotReady(err error) bool {
	return err != nil && !errors.Is(err, ErrConfig) && !errors.Is(err, ErrInvalid)
}
