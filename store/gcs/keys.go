package gcs

import "github.com/leasehold/leasehold/store/driver"

// keyEscaper keeps ASCII letters, digits, '-' and '_', and escapes every other byte with '%'.
// Decoding refuses any other byte, and lower-case hex digits.
var keyEscaper = driver.KeyEscaper{
	Mark: '%',
	Keep: func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
	},
	Strict: true,
	Prefix: "store/gcs: object name",
}

// EncodeKey returns the object name, below the store's prefix, under which the store keeps
// key (see the package documentation): ASCII letters, digits, '-' and '_' stay as they are,
// and every other byte of the key's UTF-8 text becomes '%' and two upper-case hex digits. It is
// reversible with [DecodeKey].
func EncodeKey(key string) string { return keyEscaper.Escape(key) }

// DecodeKey returns the store key that EncodeKey turned into name.
func DecodeKey(name string) (string, error) { return keyEscaper.Unescape(name) }
