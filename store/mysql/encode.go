package mysql

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// MariaDB compares object keys by their text as written in the document, and its JSON path
// parser rejects a quoted key that starts with '-' ($."-x" finds nothing, while $."\u002dx" finds
// the key written "\u002dx"). The store therefore writes every document, and every path, with
// one encoder: keys as encoding/json writes them, without HTML escapes, and with a leading '-'
// written \u002d. Both spellings decode to the same key, so readers see no difference.

// encodeJSON writes a normalized value (as the Portable store gives it, see driver.Normalize) as JSON.
func encodeJSON(v any) []byte {
	var b bytes.Buffer
	writeJSON(&b, v)
	return b.Bytes()
}

func writeJSON(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(encodeKey(k))
			b.WriteByte(':')
			writeJSON(b, x[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, e)
		}
		b.WriteByte(']')
	default:
		b.WriteString(encodeScalar(x))
	}
}

// encodeScalar encodes a string, float64, bool or nil. These always encode: Normalize refused
// NaN and infinities.
func encodeScalar(v any) string {
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return strings.TrimSuffix(sb.String(), "\n")
}

// encodeKey encodes an object key, as written in documents and paths.
func encodeKey(k string) string {
	s := encodeScalar(k)
	if strings.HasPrefix(s, `"-`) {
		s = `"\u002d` + s[2:]
	}
	return s
}

// fieldPath is the JSON path of a top-level field: the key quoted as in documents, so that dots,
// quotes, brackets and wildcards in it are literal.
func fieldPath(field string) string { return "$." + encodeKey(field) }
