package redis

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// The script's arguments are JSON texts, as encoding/json writes them. A renewal patches a
// dozen fields of strings and whole numbers: those are written here without encoding/json's
// per-call allocations, byte for byte as it writes them; anything else goes through it.

// appendJSON appends v's JSON text, as json.Marshal writes it, to b.
func appendJSON(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case string:
		return appendJSONString(b, x), nil
	case float64:
		// Whole numbers below 2^53 print alike in both; json.Marshal writes -0 as "-0".
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 && !(x == 0 && math.Signbit(x)) {
			return strconv.AppendInt(b, int64(x), 10), nil
		}
	}
	text, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, text...), nil
}

// appendJSONString appends s as a JSON string, as json.Marshal writes it (which escapes <, >
// and & too) to b.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			text, _ := json.Marshal(s) // a string always encodes
			return append(b, text...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// patchArgs returns the script's arguments for a Patch or a Delete (op) on cond, then, for a
// patch, the pairs of fields: name and value as JSON texts. One buffer holds every text.
func patchArgs(op string, cond *driver.Condition, fields map[string]any) ([]any, error) {
	args := make([]any, 0, 4+2*len(fields))
	buf := make([]byte, 0, 48*(len(fields)+1))
	// piece returns the text appended since start, capped so that a later append copies.
	piece := func(start int) []byte { return buf[start:len(buf):len(buf)] }
	if cond == nil {
		args = append(args, op, "0", "", "")
	} else {
		start := len(buf)
		buf = appendJSONString(buf, cond.Field)
		field := piece(start)
		start = len(buf)
		var err error
		if buf, err = appendJSON(buf, cond.Value); err != nil {
			return nil, fmt.Errorf("%w: condition on %q: %v", store.ErrInvalid, cond.Field, err)
		}
		args = append(args, op, "1", field, piece(start))
	}
	for k, v := range fields {
		start := len(buf)
		buf = appendJSONString(buf, k)
		name := piece(start)
		start = len(buf)
		var err error
		if buf, err = appendJSON(buf, v); err != nil {
			return nil, fmt.Errorf("%w: field %q: %v", store.ErrInvalid, k, err)
		}
		args = append(args, name, piece(start))
	}
	return args, nil
}
