package azblob

import "github.com/leasehold/leasehold/store/driver"

// blobSuffix ends every blob name the store writes: an escaped key holds no '.', so a name
// ends with it only where the store put it.
const blobSuffix = ".json"

// keyEscaper keeps ASCII letters, digits, '-' and '_', and escapes every other byte with '='.
// Decoding takes other bytes as themselves, and hex digits in either case; it does not drop
// blobSuffix, which is no part of the escaped key.
var keyEscaper = driver.KeyEscaper{
	Mark: '=',
	Keep: func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
	},
	Prefix: "store/azblob: key",
}

// EncodeKey returns the escaped form of key in its blob's name (see the package
// documentation); [DecodeKey] reverses it.
func EncodeKey(key string) string { return keyEscaper.Escape(key) }

// DecodeKey returns the store key that EncodeKey turned into k.
func DecodeKey(k string) (string, error) { return keyEscaper.Unescape(k) }
