package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// CheckCall returns the error an operation on key fails with before it starts: the context's
// when it has ended, ErrInvalid for an empty key. Backends call it first in every operation, so
// that an ended context changes nothing, whatever the client library would do with it.
func CheckCall(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return CheckKey(key)
}

// DecodeObject reads a stored document as encoding/json would, refusing anything but a JSON
// object (null included) with notJSON, the backend's sentinel for a value something else wrote,
// joined with what is wrong.
func DecodeObject(raw []byte, notJSON error) (map[string]any, error) {
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil || doc == nil {
		if err == nil {
			err = errors.New("null")
		}
		return nil, fmt.Errorf("%w: %v", notJSON, err)
	}
	return doc, nil
}
