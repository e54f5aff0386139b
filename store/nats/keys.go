package nats

import (
	"errors"
	"strconv"
	"strings"
)

const hexDigits = "0123456789ABCDEF"

// EncodeKey returns the NATS key under which the store keeps key (see the package
// documentation). It is reversible with [DecodeKey].
func EncodeKey(key string) string {
	var b strings.Builder
	b.Grow(len(key))
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '/':
			b.WriteByte(c)
		default:
			b.WriteByte('=')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
	return b.String()
}

// DecodeKey returns the store key that EncodeKey turned into k.
func DecodeKey(k string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		if k[i] != '=' {
			b.WriteByte(k[i])
			continue
		}
		if i+3 > len(k) {
			return "", errors.New("store/nats: truncated escape in key " + strconv.Quote(k))
		}
		v, err := strconv.ParseUint(k[i+1:i+3], 16, 8)
		if err != nil {
			return "", errors.New("store/nats: bad escape in key " + strconv.Quote(k))
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), nil
}
