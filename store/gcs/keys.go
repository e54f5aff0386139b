package gcs

import (
	"errors"
	"strconv"
	"strings"
)

const hexDigits = "0123456789ABCDEF"

// EncodeKey returns the object name, below the store's prefix, under which the store keeps
// key (see the package documentation): ASCII letters, digits, '-' and '_' stay as they are,
// and every other byte of the key's UTF-8 text becomes '%' and two upper-case hex digits. It is
// reversible with [DecodeKey].
func EncodeKey(key string) string {
	var b strings.Builder
	b.Grow(len(key))
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
	return b.String()
}

// DecodeKey returns the store key that EncodeKey turned into name.
func DecodeKey(name string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != '%' {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", errors.New("store/gcs: unescaped byte in object name " + strconv.Quote(name))
			}
			b.WriteByte(c)
			continue
		}
		if i+3 > len(name) {
			return "", errors.New("store/gcs: truncated escape in object name " + strconv.Quote(name))
		}
		v, err := strconv.ParseUint(name[i+1:i+3], 16, 8)
		if err != nil || strings.ToUpper(name[i+1:i+3]) != name[i+1:i+3] {
			return "", errors.New("store/gcs: bad escape in object name " + strconv.Quote(name))
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), nil
}
