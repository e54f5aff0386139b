package s3

import "github.com/leasehold/leasehold/store/driver"

// keyEscaper keeps ASCII letters, digits and '-', and escapes every other byte with '_'.
// Decoding refuses any other byte, and lower-case hex digits.
var keyEscaper = driver.KeyEscaper{
	Mark: '_',
	Keep: func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
	},
	Strict: true,
	Prefix: "store/s3: object name",
}

// EncodeKey returns the object name, below the store's prefix, under which the store keeps key
// (see the package documentation). It is reversible with [DecodeKey].
func EncodeKey(key string) string { return keyEscaper.Escape(key) }

// DecodeKey returns the store key that EncodeKey turned into name.
func DecodeKey(name string) (string, error) { return keyEscaper.Unescape(name) }
