package leasehold

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Config is a parsed Webda-style configuration:
//
//	{"services": {"<name>": {"type": "<Type>", ...parameters}}}
//
// Services keep the order of their keys, which is the order of creation and Init (A1).
type Config struct {
	Services []ServiceConfig
}

// ServiceConfig is one entry of "services".
type ServiceConfig struct {
	Name   string
	Type   string
	Params json.RawMessage // the whole object, "type" included

	made Service // a service the program made (Made): New takes it as it is
}

// Made returns the entry of a service the program made itself, named name, of type typ (the
// type errors and logs name): New takes svc as it is, with no parameters to decode. Every
// application New makes of the entry shares svc: start only one of them. A program so
// composes an application of a service it built in code beside configured ones: the leasehold
// command's --store is the store it opened from the URL, as the Registry of a
// Webda/StoreClusterService.
func Made(name, typ string, svc Service) ServiceConfig {
	return ServiceConfig{Name: name, Type: typ, made: svc}
}

// Only returns the configuration of the services keep accepts, in their order. A program that
// uses part of an application's configuration builds an Application of just those: the
// leasehold command keeps the Registry and the cluster service, and leaves aside the
// application's own services, whose types it does not link.
func (c *Config) Only(keep func(ServiceConfig) bool) *Config {
	out := &Config{}
	for _, sc := range c.Services {
		if keep(sc) {
			out.Services = append(out.Services, sc)
		}
	}
	return out
}

// HasType reports whether the service is of type typ, with or without the Webda/ namespace
// (A2).
func (sc ServiceConfig) HasType(typ string) bool { return typeKey(sc.Type) == typeKey(typ) }

// Registered reports whether the service's type is registered in this program, so that New can
// create it. A program that links only some of an application's service types (the leasehold
// command) passes it to Only to build an Application of those it can create.
func (sc ServiceConfig) Registered() bool {
	_, ok := lookupType(sc.Type)
	return ok || sc.made != nil
}

// ParseConfig parses a configuration. A malformed document is an error giving the line and
// column; a service that is not an object, or has no string "type", is an error naming it.
// Service types and parameters are checked by New.
func ParseConfig(data []byte) (*Config, error) {
	cfg, err := parseConfig(data)
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			// A Decoder's offsets are not from the start of the document; Unmarshal's are.
			var v any
			if uerr := json.Unmarshal(data, &v); errors.As(uerr, &se) {
				// Offset counts the offending byte: point at it.
				line, col := position(data, max(se.Offset-1, 0))
				return nil, fmt.Errorf("leasehold: config: line %d, column %d: %v", line, col, se)
			}
			return nil, fmt.Errorf("leasehold: config: %w", err)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			line, col := position(data, int64(len(data)))
			return nil, fmt.Errorf("leasehold: config: line %d, column %d: unexpected end of JSON", line, col)
		}
		return nil, fmt.Errorf("leasehold: config: %w", err)
	}
	return cfg, nil
}

// LoadConfig reads and parses the configuration file at path.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("leasehold: config: %w", err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

func parseConfig(data []byte) (*Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := expectDelim(dec, '{', "the configuration"); err != nil {
		return nil, err
	}
	cfg := &Config{}
	seen := map[string]bool{}
	for dec.More() {
		key, err := objectKey(dec)
		if err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, fmt.Errorf("key %q appears twice", key)
		}
		seen[key] = true
		switch key {
		case "services":
			if cfg.Services, err = parseServices(dec); err != nil {
				return nil, err
			}
		case "version", "$schema", "parameters":
			// Webda keeps these beside "services"; leasehold has no use for them.
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("unknown key %q (known: services, parameters, version, $schema)", key)
		}
	}
	if err := expectDelim(dec, '}', "the configuration"); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the configuration object")
	}
	return cfg, nil
}

// parseServices reads the "services" object with a token reader: a Go map would lose the
// order of its keys, which is the services' order (A1).
func parseServices(dec *json.Decoder) ([]ServiceConfig, error) {
	if err := expectDelim(dec, '{', `"services"`); err != nil {
		return nil, err
	}
	var out []ServiceConfig
	seen := map[string]bool{}
	for dec.More() {
		name, err := objectKey(dec)
		if err != nil {
			return nil, err
		}
		if seen[name] {
			return nil, fmt.Errorf("service %q is configured twice", name)
		}
		seen[name] = true
		if name == "" {
			return nil, errors.New("a service has an empty name")
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		var head struct {
			Type json.RawMessage `json:"type"`
		}
		if raw[0] != '{' || json.Unmarshal(raw, &head) != nil {
			return nil, fmt.Errorf("service %q: want an object with a \"type\", got %s", name, kindOf(raw))
		}
		var typ string
		if head.Type == nil {
			return nil, fmt.Errorf("service %q: missing \"type\" (known types: %v)", name, ServiceTypes())
		}
		if err := json.Unmarshal(head.Type, &typ); err != nil || typ == "" {
			return nil, fmt.Errorf("service %q: \"type\" must be a non-empty string, got %s", name, head.Type)
		}
		out = append(out, ServiceConfig{Name: name, Type: typ, Params: raw})
	}
	return out, expectDelim(dec, '}', `"services"`)
}

func objectKey(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	key, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("want an object key, got %v", tok)
	}
	return key, nil
}

func expectDelim(dec *json.Decoder, want json.Delim, what string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		if want == '{' {
			return fmt.Errorf("%s must be a JSON object, got %v", what, describe(tok))
		}
		return fmt.Errorf("%s: want %q, got %v", what, want, describe(tok))
	}
	return nil
}

func describe(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		return string(v)
	case string:
		return fmt.Sprintf("string %q", v)
	case nil:
		return "null"
	}
	return fmt.Sprint(tok)
}

func kindOf(raw json.RawMessage) string {
	switch raw[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

// position turns a byte offset into a 1-based line and column.
func position(data []byte, offset int64) (line, col int) {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	line, col = 1, 1
	for _, b := range data[:offset] {
		if b == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}
