package leasehold

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// decodeParams decodes a service's parameters into svc strictly: "type" is skipped, an
// unknown parameter is an error (names must match exactly: encoding/json alone would accept
// "LEASEDURATION"), and each parameter is decoded on its own so that an error names it.
func decodeParams(svc Service, raw json.RawMessage) error {
	fields, err := objectFields(raw)
	if err != nil {
		return err
	}
	known := paramNames(reflect.TypeOf(svc))
	if d, ok := svc.(paramDeclarer); ok && known != nil {
		for _, name := range d.declaredParams() {
			known[name] = true
		}
	}
	for _, f := range fields {
		if f.name == "type" {
			continue
		}
		if known != nil && !known[f.name] {
			return unknownParam(f.name, known)
		}
		one, _ := json.Marshal(map[string]json.RawMessage{f.name: f.value})
		dec := json.NewDecoder(bytes.NewReader(one))
		dec.DisallowUnknownFields()
		if err := dec.Decode(svc); err != nil {
			return paramError(f.name, err, known)
		}
	}
	return nil
}

// paramDeclarer is a service with parameters that are not fields of its struct, which its
// UnmarshalJSON decodes: the store service type takes those its backend declares.
type paramDeclarer interface{ declaredParams() []string }

type field struct {
	name  string
	value json.RawMessage
}

func objectFields(raw json.RawMessage) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '{', checked by ParseConfig
		return nil, err
	}
	var out []field
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name := tok.(string)
		if seen[name] {
			return nil, fmt.Errorf("parameter %q appears twice", name)
		}
		seen[name] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, field{name, v})
	}
	return out, nil
}

// paramNames returns the JSON names of the parameters of a struct type (or pointer to one),
// following embedded structs; nil when t is not a struct.
func paramNames(t reflect.Type) map[string]bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	names := map[string]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if tag == "-" {
				continue
			}
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if f.Anonymous && tag == "" && ft.Kind() == reflect.Struct {
				walk(ft)
				continue
			}
			if !f.IsExported() {
				continue
			}
			if tag == "" {
				tag = f.Name
			}
			names[tag] = true
		}
	}
	walk(t)
	return names
}

func unknownParam(name string, known map[string]bool) error {
	var list []string
	hint := ""
	for k := range known {
		list = append(list, k)
		if strings.EqualFold(k, name) {
			hint = fmt.Sprintf(" (did you mean %q?)", k)
		}
	}
	slices.Sort(list)
	return fmt.Errorf("unknown parameter %q%s (known: %s)", name, hint, strings.Join(list, ", "))
}

func paramError(name string, err error, known map[string]bool) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("parameter %q: want %s, got %s", name, jsonKind(te.Type), te.Value)
	}
	if strings.HasPrefix(err.Error(), "json: unknown field") {
		return unknownParam(name, known)
	}
	return fmt.Errorf("parameter %q: %v", name, err)
}

func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}
