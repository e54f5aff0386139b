package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"testing"
)

// TableName returns a table name unique to this run, so that the SQL backends' tests can run in
// parallel and against a database holding other tests' tables.
func TableName(t testing.TB) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "lh_test_" + hex.EncodeToString(b)
}
