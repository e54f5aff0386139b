package cluster

import (
	"fmt"
	"math"
	"time"
)

// A storeField is one field of Record in the store Lock's document (S1), beyond those of every
// record (holder, term, times, duration, revision). A feature that adds a field to Record
// registers its storeField from its own file (registerStoreFields, in an init), and
// encodeRecord and decodeRecord go through them all: the store Lock names no feature.
//
// Every field is written by every write, zero when unset: a Patch leaves the fields it does
// not name, and a write must clear what the record it replaces had (a request a renewal
// answers, a value a release drops). A document written before the field existed lacks it,
// and the field reads as zero; so does a null.
type storeField struct {
	key    string
	encode func(r *Record) any
	// decode sets the field from v, the document's value, neither absent nor null; it returns
	// what v should have been ("a string") when v does not fit, "" when it does.
	decode func(v any, r *Record) (want string)
}

// storeFields are the registered fields, in the order of registration.
var storeFields []storeField

// registerStoreFields adds fields to the store Lock's documents. A key registered twice, or
// one of the keys every record has, is a programming error, found when the package loads.
func registerStoreFields(fields ...storeField) {
	for _, f := range fields {
		if coreKeys[f.key] {
			panic("cluster: store document field " + f.key + " is one of every record's")
		}
		for _, g := range storeFields {
			if g.key == f.key {
				panic("cluster: store document field " + f.key + " registered twice")
			}
		}
		storeFields = append(storeFields, f)
	}
}

// coreKeys are the keys encodeRecord writes itself.
var coreKeys = map[string]bool{"holder": true, "term": true, "acquiredAt": true, "renewedAt": true, "leaseDuration": true, "revision": true}

// stringField is a string field of Record, stored as it is.
func stringField(key string, field func(*Record) *string) storeField {
	return storeField{key: key,
		encode: func(r *Record) any { return *field(r) },
		decode: func(v any, r *Record) string {
			s, ok := v.(string)
			if !ok {
				return "a string"
			}
			*field(r) = s
			return ""
		},
	}
}

// timeField is a time.Time field of Record, stored as an RFC 3339 time with nanoseconds (UTC),
// "" for the zero time. Like the record's own times, a value that is not a string reads as
// zero.
func timeField(key string, field func(*Record) *time.Time) storeField {
	return storeField{key: key,
		encode: func(r *Record) any { return formatTime(*field(r)) },
		decode: func(v any, r *Record) string {
			s, _ := v.(string)
			if s == "" {
				return ""
			}
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return "an RFC 3339 time"
			}
			*field(r) = t
			return ""
		},
	}
}

// counterField is a uint64 field of Record (a term), stored as a JSON number: exact up to
// 2^53, which no term reaches.
func counterField(key string, field func(*Record) *uint64) storeField {
	return storeField{key: key,
		encode: func(r *Record) any { return float64(*field(r)) },
		decode: func(v any, r *Record) string {
			n, ok := v.(float64)
			if !ok || n < 0 || n != math.Trunc(n) || n >= math.MaxUint64 {
				return "a non-negative integer"
			}
			*field(r) = uint64(n)
			return ""
		},
	}
}

// intField is an int field of Record within 32 bits (a priority), stored as a JSON number.
func intField(key string, field func(*Record) *int) storeField {
	return storeField{key: key,
		encode: func(r *Record) any { return float64(*field(r)) },
		decode: func(v any, r *Record) string {
			n, ok := v.(float64)
			if !ok || n != math.Trunc(n) || math.Abs(n) > math.MaxInt32 {
				return "an integer"
			}
			*field(r) = int(n)
			return ""
		},
	}
}

// boolField is a bool field of Record, stored as a JSON boolean.
func boolField(key string, field func(*Record) *bool) storeField {
	return storeField{key: key,
		encode: func(r *Record) any { return *field(r) },
		decode: func(v any, r *Record) string {
			b, ok := v.(bool)
			if !ok {
				return "true or false"
			}
			*field(r) = b
			return ""
		},
	}
}

// encodeFields writes the registered fields of r into doc.
func encodeFields(doc map[string]any, r Record) {
	for _, f := range storeFields {
		doc[f.key] = f.encode(&r)
	}
}

// decodeFields reads the registered fields of doc into r; a malformed one is an error naming
// it.
func decodeFields(doc map[string]any, r *Record) error {
	for _, f := range storeFields {
		v, ok := doc[f.key]
		if !ok || v == nil {
			continue
		}
		if want := f.decode(v, r); want != "" {
			return fmt.Errorf("field %q is %v, want %s", f.key, v, want)
		}
	}
	return nil
}
