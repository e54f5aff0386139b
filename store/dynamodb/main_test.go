package dynamodb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/leasehold/leasehold/internal/cloudemu"
	"github.com/leasehold/leasehold/internal/testenv"
)

// emu is the dynalite TestMain starts for the whole package; nil when it is not installed
// (unavailable then says why).
var (
	emu         *cloudemu.Emulator
	unavailable string
	// endpoint is the emulator's, through a dynaliteProxy (proxy_test.go).
	endpoint string
)

func TestMain(m *testing.M) {
	// dynalite accepts any credentials; they come from the environment, as the AWS chain reads
	// them, never from a URL. No shared file or instance metadata of the machine interferes.
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":           cloudemu.AccessKey,
		"AWS_SECRET_ACCESS_KEY":       cloudemu.SecretKey,
		"AWS_REGION":                  "us-east-1",
		"AWS_CONFIG_FILE":             os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		os.Setenv(k, v)
	}
	os.Unsetenv("AWS_PROFILE")
	os.Unsetenv("AWS_SESSION_TOKEN")
	os.Unsetenv("AWS_ENDPOINT_URL")
	os.Unsetenv("AWS_ENDPOINT_URL_DYNAMODB")
	dir, err := os.MkdirTemp("", "leasehold-dynamodb-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	e, err := cloudemu.Start(context.Background(), cloudemu.DynamoDB, dir)
	switch {
	case errors.Is(err, cloudemu.ErrUnavailable):
		unavailable = err.Error()
	case err != nil:
		os.RemoveAll(dir)
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	default:
		emu = e
	}
	var p *dynaliteProxy
	if emu != nil {
		p = newDynaliteProxy(emu.Endpoint)
		endpoint = p.Endpoint()
	}
	code := m.Run()
	if p != nil {
		p.Close()
	}
	if emu != nil {
		if code != 0 {
			fmt.Fprintf(os.Stderr, "dynalite's log:\n%s\n", emu.Log())
		}
		emu.Close()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// emulatorEndpoint returns the endpoint of the package's dynalite, through its proxy, or skips
// t (fails it when servers are required).
func emulatorEndpoint(t testing.TB) string {
	t.Helper()
	if emu == nil {
		testenv.Unavailable(t, unavailable)
	}
	return endpoint
}

// newTable returns a table name no other test uses.
func newTable() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "leasehold_test_" + hex.EncodeToString(b)
}

// serverURL returns the URL of a table no other test uses, on the emulator, created at the
// first Open, and the table's name.
func serverURL(t testing.TB) (string, string) {
	t.Helper()
	table := newTable()
	return "dynamodb://" + table + "?endpoint=" + url.QueryEscape(emulatorEndpoint(t)) + "&create_table=true", table
}

// openTest opens a store on a new table of the emulator, deleted when the test ends.
func openTest(t testing.TB) *Store {
	t.Helper()
	raw, _ := serverURL(t)
	return openCleaned(t, raw)
}

// openCleaned opens the store of raw, and when the test ends deletes its table and closes it.
func openCleaned(t testing.TB, raw string) *Store {
	t.Helper()
	s, err := Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		deleteTable(t, s.Client(), s.Table())
		s.Close()
	})
	return s
}

// deleteTable deletes table through client.
func deleteTable(t testing.TB, client *ddb.Client, table string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := client.DeleteTable(ctx, &ddb.DeleteTableInput{TableName: aws.String(table)}); err != nil {
		t.Errorf("deleting table %s: %v", table, err)
	}
}
