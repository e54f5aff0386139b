//go:build unix

package s3

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
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/leasehold/leasehold/internal/cloudemu"
	"github.com/leasehold/leasehold/internal/testenv"
)

// emu is the versitygw TestMain starts for the whole package (each test makes buckets of its
// own), and emuErr why there is none.
var (
	emu    *cloudemu.Emulator
	emuErr error
)

func TestMain(m *testing.M) {
	// The store takes its credentials from the AWS chain: here the environment, the emulator's
	// root user, and nothing from the machine's own AWS configuration.
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":           cloudemu.AccessKey,
		"AWS_SECRET_ACCESS_KEY":       cloudemu.SecretKey,
		"AWS_SESSION_TOKEN":           "",
		"AWS_PROFILE":                 "",
		"AWS_REGION":                  "us-east-1",
		"AWS_CONFIG_FILE":             os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		os.Setenv(k, v)
	}
	dir, err := os.MkdirTemp("", "leasehold-s3-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	emu, emuErr = cloudemu.Start(context.Background(), cloudemu.S3, dir)
	if emuErr != nil && !errors.Is(emuErr, cloudemu.ErrUnavailable) {
		fmt.Fprintln(os.Stderr, "cannot start versitygw:", emuErr)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	if emu != nil {
		emu.Close()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// emulator returns the package's versitygw, skipping t when it is not installed (failing it
// when servers are required).
func emulator(t testing.TB) *cloudemu.Emulator {
	t.Helper()
	if emu == nil {
		testenv.Unavailable(t, emuErr.Error())
	}
	return emu
}

// adminClient is an S3 client of the emulator's root user, for the tests' own setup and
// checks.
func adminClient(t testing.TB) *s3.Client {
	t.Helper()
	e := emulator(t)
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(e.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(cloudemu.AccessKey, cloudemu.SecretKey, ""),
	})
}

// newBucket creates a bucket no other test uses, and returns its name.
func newBucket(t testing.TB) string {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	name := "leasehold-test-" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := adminClient(t).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("create bucket %s: %v\n%s", name, err, emu.Log())
	}
	return name
}

// bucketURL returns the URL of a store on bucket at the emulator, with the parameters of the
// pairs kv set.
func bucketURL(t testing.TB, bucket, prefix string, kv ...string) string {
	t.Helper()
	e := emulator(t)
	q := url.Values{"endpoint": {e.Endpoint}, "path_style": {"true"}, "region": {"us-east-1"}}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	u := url.URL{Scheme: "s3", Host: bucket, Path: "/" + prefix, RawQuery: q.Encode()}
	return u.String()
}

// testURL returns the URL of a store on a new bucket, under prefix "leases/".
func testURL(t testing.TB, kv ...string) string {
	t.Helper()
	return bucketURL(t, newBucket(t), "leases/", kv...)
}

// openTest opens the store at raw, closed when the test ends.
func openTest(t testing.TB, raw string) *Store {
	t.Helper()
	s, err := Open(t.Context(), raw)
	if err != nil {
		t.Fatalf("%v\n%s", err, emu.Log())
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// rawObject returns the body and metadata of the object name in bucket, through the admin
// client.
func rawObject(t testing.TB, bucket, name string) ([]byte, map[string]string, error) {
	t.Helper()
	out, err := adminClient(t).GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(name)})
	if err != nil {
		return nil, nil, err
	}
	defer out.Body.Close()
	b := make([]byte, 0, 256)
	buf := make([]byte, 256)
	for {
		n, err := out.Body.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil {
			break
		}
	}
	return b, out.Metadata, nil
}
