package file

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// ErrCorrupt means the data file is not a valid store file: not JSON (corrupt or truncated),
// empty, or not an object whose values are objects. The store never writes over such a file.
// For JSON syntax errors, the *json.SyntaxError is reachable with errors.As.
var ErrCorrupt = errors.New("file store: corrupt data file")

// version identifies one version of the data file, for the parsed copy a store keeps.
type version struct {
	gen      uint64 // write generation, from the lock file
	exists   bool
	dev, ino uint64
	size     int64
	mtime    int64
}

// decode parses the content of the data file at path.
func decode(path string, data []byte) (docs, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%w: %s: empty file (%d bytes)", ErrCorrupt, path, len(data))
	}
	var top any
	if err := json.Unmarshal(data, &top); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(data[:min(se.Offset, int64(len(data)))], []byte("\n"))
			return nil, fmt.Errorf("%w: %s: invalid JSON after byte %d of %d (line %d): %w", ErrCorrupt, path, se.Offset, len(data), line, err)
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, path, err)
	}
	m, ok := top.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: %s: top-level value is %s, not an object", ErrCorrupt, path, jsonType(top))
	}
	d := make(docs, len(m))
	for k, v := range m {
		doc, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: %s: document %q is %s, not an object", ErrCorrupt, path, k, jsonType(v))
		}
		d[k] = doc
	}
	return d, nil
}

// encode renders d as the data file's content: one key per line, keys sorted, so that the file
// reads well and diffs well.
func encode(d docs) ([]byte, error) {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var buf bytes.Buffer
	buf.WriteString("{\n")
	for i, k := range keys {
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		db, err := json.Marshal(d[k])
		if err != nil {
			return nil, fmt.Errorf("document %q: %w", k, err)
		}
		buf.Write(kb)
		buf.WriteString(": ")
		buf.Write(db)
		if i < len(keys)-1 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
	}
	buf.WriteString("}\n")
	return buf.Bytes(), nil
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
