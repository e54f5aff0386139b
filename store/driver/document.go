package driver

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"unicode/utf8"

	"github.com/leasehold/leasehold/store"
)

// Normalize returns a deep copy of v in the form encoding/json decodes into: string, float64,
// bool, nil, []any and map[string]any. Values of other types (other numeric types, structs,
// time.Time, types with MarshalJSON) go through a JSON round trip. The Portable store gives
// drivers documents in this form, so that a document reads back the same from every store and
// so that callers never share a map with the driver.
func Normalize(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool:
		return x, nil
	case string:
		return validString(x), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%w: %v is not a JSON number", store.ErrInvalid, x)
		}
		return x, nil
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case uint64:
		return float64(x), nil
	case int32:
		return float64(x), nil
	case uint32:
		return float64(x), nil
	case float32:
		return Normalize(float64(x))
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return nil, fmt.Errorf("%w: %q is not a JSON number", store.ErrInvalid, x)
		}
		return f, nil
	case map[string]any:
		if x == nil {
			return nil, nil // encoding/json writes a nil map as null
		}
		return normalizeMap(x)
	case []any:
		if x == nil {
			return nil, nil // encoding/json writes a nil slice as null
		}
		out := make([]any, len(x))
		for i, e := range x {
			n, err := Normalize(e)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", store.ErrInvalid, err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("%w: %v", store.ErrInvalid, err)
	}
	return out, nil
}

func normalizeMap(m map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(m))
	for k, e := range m {
		n, err := Normalize(e)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
		out[validString(k)] = n
	}
	return out, nil
}

// validString returns s as encoding/json reads it back: each byte of an invalid UTF-8
// sequence becomes U+FFFD.
func validString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}

// NormalizeDoc is Normalize for a whole document; a nil document is store.ErrInvalid.
func NormalizeDoc(doc map[string]any) (map[string]any, error) {
	if doc == nil {
		return nil, fmt.Errorf("%w: nil document", store.ErrInvalid)
	}
	return normalizeMap(doc)
}

// CopyDoc returns a deep copy of a normalized document.
func CopyDoc(doc map[string]any) map[string]any {
	out := make(map[string]any, len(doc))
	for k, v := range doc {
		out[k] = copyValue(v)
	}
	return out
}

func copyValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return CopyDoc(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyValue(e)
		}
		return out
	}
	return v
}

// JSONEqual reports whether a and b are equal as JSON values: 1 == 1.0, "1" != 1, objects are
// equal when they have the same keys with equal values.
func JSONEqual(a, b any) bool {
	na, err := Normalize(a)
	if err != nil {
		return false
	}
	nb, err := Normalize(b)
	if err != nil {
		return false
	}
	return reflect.DeepEqual(na, nb)
}
