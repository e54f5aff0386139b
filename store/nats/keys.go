package nats

import "github.com/leasehold/leasehold/store/driver"

// keyEscaper keeps ASCII letters, digits, '-' and '/', and escapes every other byte with '='.
// Decoding takes other bytes as themselves, and hex digits in either case.
var keyEscaper = driver.KeyEscaper{
	Mark: '=',
	Keep: func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '/'
	},
	Prefix: "store/nats: key",
}

// EncodeKey returns the NATS key under which the store keeps key (see the package
// documentation). It is reversible with [DecodeKey].
func EncodeKey(key string) string { return keyEscaper.Escape(key) }

// DecodeKey returns the store key that EncodeKey turned into k.
func DecodeKey(k string) (string, error) { return keyEscaper.Unescape(k) }
