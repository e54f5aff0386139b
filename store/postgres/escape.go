package postgres

import "strings"

// jsonb refuses the NUL character (\u0000) in strings, which encoding/json writes and the store
// contract allows. Strings are therefore stored with a one-to-one escape: U+0000 becomes
// U+E000 '0' and U+E000 becomes U+E000 U+E000. Being one-to-one, it keeps jsonb's equality
// (conditions) and its key lookups exact; only strings holding either character change.
const escape = '\uE000'

const escapeChars = "\x00\uE000"

func escapeString(s string) string {
	if !strings.ContainsAny(s, escapeChars) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range s {
		switch r {
		case 0:
			b.WriteRune(escape)
			b.WriteByte('0')
		case escape:
			b.WriteRune(escape)
			b.WriteRune(escape)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func unescapeString(s string) string {
	if !strings.ContainsRune(s, escape) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	pending := false
	for _, r := range s {
		switch {
		case pending && r == '0':
			b.WriteByte(0)
			pending = false
		case pending:
			// U+E000 U+E000, or a lone U+E000 written by another program: keep it.
			b.WriteRune(escape)
			pending = false
			if r != escape {
				b.WriteRune(r)
			}
		case r == escape:
			pending = true
		default:
			b.WriteRune(r)
		}
	}
	if pending {
		b.WriteRune(escape)
	}
	return b.String()
}

// escapeValue applies escapeString to every string of a normalized value, object keys included.
// It returns v itself when nothing needs escaping.
func escapeValue(v any) any { return mapStrings(v, escapeString, escapeChars) }

// unescapeValue undoes escapeValue.
func unescapeValue(v any) any { return mapStrings(v, unescapeString, string(escape)) }

func mapStrings(v any, f func(string) string, chars string) any {
	switch x := v.(type) {
	case string:
		if strings.ContainsAny(x, chars) {
			return f(x)
		}
		return x
	case map[string]any:
		var renamed []string
		for k, e := range x {
			x[k] = mapStrings(e, f, chars)
			if strings.ContainsAny(k, chars) {
				renamed = append(renamed, k)
			}
		}
		// Renaming after the loop: a key added while ranging over a map may be visited again.
		for _, k := range renamed {
			e := x[k]
			delete(x, k)
			x[f(k)] = e
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = mapStrings(e, f, chars)
		}
		return x
	}
	return v
}
