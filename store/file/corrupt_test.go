package file

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/store"
)

const goodFile = "{\n\"a\": {\"n\":1,\"s\":\"hello\"},\n\"b\": {\"n\":2}\n}\n"

// corruptCases are data files a store must refuse. offset is, for syntax errors, the number of
// bytes encoding/json read when it failed (the bad byte included), -1 for the other errors.
var corruptCases = []struct {
	name, content string
	offset        int
	says          string
}{
	{"truncated", goodFile[:len(goodFile)/2], len(goodFile) / 2, "unexpected end of JSON input"},
	{"truncated after a document", goodFile[:strings.Index(goodFile, "},")+2], strings.Index(goodFile, "},") + 2, "unexpected end"},
	{"garbage inside", strings.Replace(goodFile, `"n":2`, `"n":2#`, 1), strings.Index(goodFile, `"n":2`) + 6, "invalid character '#'"},
	{"trailing garbage", goodFile + "xx", len(goodFile) + 1, "invalid character 'x' after top-level value"},
	{"zero bytes", strings.Repeat("\x00", 16), 1, "invalid character"},
	{"empty", "", -1, "empty file"},
	{"blank", " \n", -1, "empty file"},
	{"array", "[]\n", -1, "top-level value is an array"},
	{"null", "null\n", -1, "top-level value is null"},
	{"document not an object", "{\"a\": {}, \"b\": 1}\n", -1, `document "b" is a number`},
	{"null document", "{\"a\": null}\n", -1, `document "a" is null`},
}

// T6: a corrupt or truncated data file is an error naming the file (and the offset of a syntax
// error), at Open, and is never overwritten.
func TestOpenCorruptFile(t *testing.T) {
	for _, tc := range corruptCases {
		t.Run(tc.name, func(t *testing.T) {
			path := newPath(t)
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Open(path)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			checkCorrupt(t, err, path, tc.offset, tc.says)
			wantUnchanged(t, path, []byte(tc.content))
		})
	}
}

// T6: a data file corrupted while a store is open fails every operation, with the key and the
// file named, and is left as it is; once repaired, the store works again.
func TestOperationsOnCorruptFile(t *testing.T) {
	for _, tc := range corruptCases {
		t.Run(tc.name, func(t *testing.T) {
			path := newPath(t)
			if err := os.WriteFile(path, []byte(goodFile), 0o644); err != nil {
				t.Fatal(err)
			}
			s := mustOpen(t, path)
			ctx := t.Context()
			if _, err := s.Get(ctx, "a"); err != nil {
				t.Fatal(err)
			}
			// Replace the file as another program would: the store must not trust its copy.
			tmp := path + ".new"
			if err := os.WriteFile(tmp, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
			_, getErr := s.Get(ctx, "a")
			ops := []struct {
				op  string
				err error
			}{
				{"get", getErr},
				{"create", s.Create(ctx, "new", map[string]any{"n": 1})},
				{"patch", s.Patch(ctx, "a", map[string]any{"n": 5}, &store.Condition{Field: "n", Value: 1})},
				{"delete", s.Delete(ctx, "b", nil)},
			}
			for _, o := range ops {
				t.Run(o.op, func(t *testing.T) {
					checkCorrupt(t, o.err, path, tc.offset, tc.says)
					var ke *store.KeyError
					if !errors.As(o.err, &ke) || ke.Op != o.op {
						t.Errorf("error %v is not wrapped with its operation and key", o.err)
					}
				})
			}
			wantUnchanged(t, path, []byte(tc.content))
			if got := temps(t, path); len(got) != 0 {
				t.Errorf("temporary files left: %v", got)
			}
			if err := os.WriteFile(path, []byte(goodFile), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := s.Patch(ctx, "a", map[string]any{"n": 5}, &store.Condition{Field: "n", Value: 1}); err != nil {
				t.Fatalf("Patch once the file is repaired: %v", err)
			}
		})
	}
}

func checkCorrupt(t *testing.T, err error, path string, offset int, says string) {
	t.Helper()
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("error %v, want ErrCorrupt", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, path) || !strings.Contains(msg, says) {
		t.Errorf("error %q does not name %s and say %q", msg, path, says)
	}
	var se *json.SyntaxError
	if offset < 0 {
		if errors.As(err, &se) {
			t.Errorf("error %q wraps a syntax error", msg)
		}
		return
	}
	if !errors.As(err, &se) {
		t.Fatalf("error %q does not wrap the *json.SyntaxError", msg)
	}
	if se.Offset != int64(offset) {
		t.Errorf("syntax error at offset %d, want %d", se.Offset, offset)
	}
	if want := fmt.Sprintf("after byte %d of ", offset); !strings.Contains(msg, want) {
		t.Errorf("error %q does not say %q", msg, want)
	}
}

// Open's errors name the path and keep the cause reachable.
func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no", "such", "dir", "store.json")
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path string
		is         error
		says       string
	}{
		{"empty path", "", nil, "empty path"},
		{"missing directory", missing, fs.ErrNotExist, missing},
		{"parent is a file", filepath.Join(notDir, "store.json"), nil, "is not a directory"},
		{"path is a directory", dir, nil, "not a regular file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(tc.path)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v, want %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("error %q does not name %q and say %q", err, tc.path, tc.says)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "no")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open created the missing directory: %v", err)
	}
}
