package driver

import (
	"errors"
	"strconv"
	"strings"
)

// KeyEscaper maps store keys reversibly onto the names a backend takes: a byte of the key that
// Keep reports stays as it is, and every other byte becomes Mark and two upper-case hex digits.
// Keep must not report Mark, or two keys could share a name.
type KeyEscaper struct {
	// Mark starts an escape.
	Mark byte
	// Keep reports the bytes that stand for themselves.
	Keep func(c byte) bool
	// Strict makes Unescape refuse what Escape never writes: a byte that is neither Mark nor
	// reported by Keep, and lower-case hex digits. Without it such a byte stands for itself and
	// the digits are read in either case.
	Strict bool
	// Prefix starts the text of Unescape's errors, which go on with the name quoted: the
	// package and what the name is, such as "store/s3: object name".
	Prefix string
}

const upperHex = "0123456789ABCDEF"

// Escape returns the name of key.
func (e KeyEscaper) Escape(key string) string {
	var b strings.Builder
	b.Grow(len(key))
	for i := 0; i < len(key); i++ {
		c := key[i]
		if e.Keep(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte(e.Mark)
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&15])
	}
	return b.String()
}

// Unescape returns the key that Escape turned into name.
func (e KeyEscaper) Unescape(name string) (string, error) {
	var b strings.Builder
	b.Grow(len(name))
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != e.Mark {
			if e.Strict && !e.Keep(c) {
				return "", e.errorf("unescaped byte", name)
			}
			b.WriteByte(c)
			continue
		}
		if i+3 > len(name) {
			return "", e.errorf("truncated escape", name)
		}
		hi, ok1 := e.hexDigit(name[i+1])
		lo, ok2 := e.hexDigit(name[i+2])
		if !ok1 || !ok2 {
			return "", e.errorf("bad escape", name)
		}
		b.WriteByte(hi<<4 | lo)
		i += 2
	}
	return b.String(), nil
}

// hexDigit returns the value of the hex digit c: upper case only when e is strict.
func (e KeyEscaper) hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	case c >= 'a' && c <= 'f' && !e.Strict:
		return c - 'a' + 10, true
	}
	return 0, false
}

func (e KeyEscaper) errorf(what, name string) error {
	return errors.New(e.Prefix + " " + strconv.Quote(name) + ": " + what)
}
