package sqlite

import (
	sqldriver "database/sql/driver"
	"encoding/json"
	"fmt"

	"modernc.org/sqlite"

	"github.com/leasehold/leasehold/store/driver"
)

// The SQL functions the statements use; see the package documentation. They are registered
// with the driver, for every connection it opens in this process.
func init() {
	sqlite.MustRegisterDeterministicScalarFunction("leasehold_doc_matches", 3, docMatches)
	sqlite.MustRegisterDeterministicScalarFunction("leasehold_doc_patch", 2, docPatch)
}

// docMatches(doc, field, want) is 1 when doc is a JSON object whose field equals the JSON value
// want, or, with a NULL field, when doc is a JSON object; 0 otherwise, a document that is not
// JSON included (the store then reads the row and reports it).
func docMatches(_ *sqlite.FunctionContext, args []sqldriver.Value) (sqldriver.Value, error) {
	doc, ok := decodeObject(args[0])
	if !ok {
		return int64(0), nil
	}
	if args[1] == nil {
		return int64(1), nil
	}
	field, ok := text(args[1])
	if !ok {
		return nil, fmt.Errorf("leasehold_doc_matches: field is not text")
	}
	raw, ok := text(args[2])
	if !ok {
		return nil, fmt.Errorf("leasehold_doc_matches: value is not text")
	}
	var want any
	if err := json.Unmarshal([]byte(raw), &want); err != nil {
		return nil, fmt.Errorf("leasehold_doc_matches: value: %v", err)
	}
	if driver.Matches(doc, &driver.Condition{Field: field, Value: want}) {
		return int64(1), nil
	}
	return int64(0), nil
}

// docPatch(doc, fields) returns doc with the top-level fields of the JSON object fields set,
// replaced whole. The UPDATE runs it only on rows docMatches accepted, so doc is an object.
func docPatch(_ *sqlite.FunctionContext, args []sqldriver.Value) (sqldriver.Value, error) {
	doc, ok := decodeObject(args[0])
	if !ok {
		return nil, fmt.Errorf("leasehold_doc_patch: the document is not a JSON object")
	}
	fields, ok := decodeObject(args[1])
	if !ok {
		return nil, fmt.Errorf("leasehold_doc_patch: the fields are not a JSON object")
	}
	for k, v := range fields {
		doc[k] = v
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("leasehold_doc_patch: %v", err)
	}
	return string(b), nil
}

func text(v sqldriver.Value) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case []byte:
		return string(x), true
	}
	return "", false
}

func decodeObject(v sqldriver.Value) (map[string]any, bool) {
	s, ok := text(v)
	if !ok {
		return nil, false
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(s), &doc); err != nil || doc == nil {
		return nil, false
	}
	return doc, true
}
