package azblob

import (
	"errors"
	"strconv"
	"strings"
)

const hexDigits = "0123456789ABCDEF"

// blobSuffix ends every blob name the store writes: an escaped key holds no '.', so a name
// ends with it only where the store put it.
const blobSuffix = ".json"

// EncodeKey returns the escaped form of key in its blob's name (see the package
// documentation); [DecodeKey] reverses it.
func EncodeKey(key string) string {
	var b strings.Builder
	b.Grow(len(key))
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
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
			return "", errors.New("store/azblob: truncated escape in key " + strconv.Quote(k))
		}
		v, err := strconv.ParseUint(k[i+1:i+3], 16, 8)
		if err != nil {
			return "", errors.New("store/azblob: bad escape in key " + strconv.Quote(k))
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), nil
}
