//go:build unix

package s3

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/leasehold/leasehold/internal/foreigndoc"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// TestBadURL checks the errors for malformed URLs and bad parameters: they name the problem
// (the parameter, the bucket) and never a secret, and are configuration errors.
func TestBadURL(t *testing.T) {
	t.Parallel()
	storetest.BadURLs(t, "hunter2secret", map[string]string{
		"s3://AKID:hunter2secret@bucket/p":                       "user information",
		"s3://bucket/p?bogus=1":                                  "bogus",
		"s3://bucket/p?aws_secret_access_key=hunter2secret":      "aws_secret_access_key",
		"s3://Bucket_Name/p":                                     `"Bucket_Name"`,
		"s3://ab/p":                                              `"ab"`,
		"s3://bucket-/p":                                         `"bucket-"`,
		"s3:///p":                                                "names no bucket",
		"s3://bucket:9000/p":                                     "port",
		"s3://bucket/p?bucket=x_y":                               `"x_y"`,
		"s3://bucket/a//b":                                       "prefix",
		"s3://bucket/a/../b":                                     "prefix",
		"s3://bucket/p?prefix=%01x":                              "prefix",
		"s3://bucket/p?region=EU%20West":                         "region",
		"s3://bucket/p?endpoint=localhost:9000":                  "endpoint",
		"s3://bucket/p?endpoint=ftp://h":                         "endpoint",
		"s3://bucket/p?endpoint=http://h/path":                   "endpoint",
		"s3://bucket/p?path_style=perhaps":                       "path_style",
		"s3://bucket/p?delete=never":                             "delete",
		"s3://bucket/p?profile=no-such-profile&region=us-east-1": "no-such-profile",
	}, func(ctx context.Context, raw string) (store.Store, error) { return Open(ctx, raw) })
}

// TestOpenByURL checks that importing the package registers the s3 scheme (T4), and that the
// store it opens is this package's, on the URL's bucket and prefix.
func TestOpenByURL(t *testing.T) {
	t.Parallel()
	if !slices.Contains(store.Schemes(), "s3") {
		t.Fatalf("scheme s3 is not registered: %v", store.Schemes())
	}
	bucket := newBucket(t)
	s, err := store.Open(t.Context(), bucketURL(t, bucket, "app/leases"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(s)
	ss, ok := s.(*Store)
	if !ok {
		t.Fatalf("store.Open returned a %T", s)
	}
	if ss.Bucket() != bucket || ss.Prefix() != "app/leases/" {
		t.Errorf("bucket %q, prefix %q; want %q, %q", ss.Bucket(), ss.Prefix(), bucket, "app/leases/")
	}
}

// TestParams checks what each URL parameter does.
func TestParams(t *testing.T) {
	t.Parallel()
	bucket := newBucket(t)
	t.Run("prefix", func(t *testing.T) {
		for _, c := range []struct{ path, param, want string }{
			{"", "", ""},
			{"leases", "", "leases/"},
			{"a/b/", "", "a/b/"},
			{"ignored/", "from-param", "from-param/"},
		} {
			kv := []string{}
			if c.param != "" {
				kv = []string{"prefix", c.param}
			}
			s := openTest(t, bucketURL(t, bucket, c.path, kv...))
			if s.Prefix() != c.want {
				t.Errorf("path %q, prefix %q: Prefix() = %q, want %q", c.path, c.param, s.Prefix(), c.want)
			}
			key := "k:" + c.want
			if err := s.Create(t.Context(), key, map[string]any{"a": 1}); err != nil {
				t.Fatal(err)
			}
			body, _, err := rawObject(t, bucket, c.want+EncodeKey(key))
			if err != nil || string(body) != `{"a":1}` {
				t.Errorf("object %s%s: %q, %v", c.want, EncodeKey(key), body, err)
			}
		}
	})
	t.Run("bucket", func(t *testing.T) {
		s := openTest(t, bucketURL(t, "some-other-bucket", "p", "bucket", bucket))
		if s.Bucket() != bucket {
			t.Errorf("Bucket() = %q, want %q", s.Bucket(), bucket)
		}
	})
	t.Run("region", func(t *testing.T) {
		s := openTest(t, bucketURL(t, bucket, "p", "region", "us-east-1"))
		if r := s.Client().Options().Region; r != "us-east-1" {
			t.Errorf("region %q", r)
		}
		// versitygw checks the region of the signature: another is refused, as AWS refuses
		// a request signed for another region than the bucket's.
		_, err := Open(t.Context(), bucketURL(t, bucket, "p", "region", "eu-west-3"))
		t.Logf("region eu-west-3: %v", err)
		if err == nil || !strings.Contains(err.Error(), bucket) || !errors.Is(err, store.ErrConfig) {
			t.Errorf("Open with the wrong region: %v, want a configuration error naming the bucket", err)
		}
	})
	t.Run("path_style", func(t *testing.T) {
		// The SDK addresses an IP endpoint in path style whatever the option says, so only the
		// option is checked here.
		for _, v := range []bool{true, false} {
			s := openTest(t, bucketURL(t, bucket, "p", "path_style", fmt.Sprint(v)))
			if got := s.Client().Options().UsePathStyle; got != v {
				t.Errorf("path_style=%v: UsePathStyle %v", v, got)
			}
		}
	})
	t.Run("endpoint", func(t *testing.T) {
		s := openTest(t, bucketURL(t, bucket, "p"))
		if got := aws.ToString(s.Client().Options().BaseEndpoint); got != emulator(t).Endpoint {
			t.Errorf("BaseEndpoint %q, want %q", got, emulator(t).Endpoint)
		}
		_, err := parseConfig(mustURL(t, "s3://bucket/p?endpoint=http://u:pw@h"))
		if err == nil || !strings.Contains(err.Error(), `"endpoint"`) {
			t.Errorf("endpoint with user information: %v, want an error naming the parameter", err)
		}
	})
	t.Run("delete", func(t *testing.T) {
		for mode, want := range map[string]string{DeleteAuto: DeleteTombstone, DeleteTombstone: DeleteTombstone, DeleteIfMatch: DeleteIfMatch} {
			if got := openTest(t, bucketURL(t, bucket, "p", "delete", mode)).DeleteMode(); got != want {
				t.Errorf("delete=%s: DeleteMode() = %s, want %s", mode, got, want)
			}
		}
	})
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestMissingBucket checks that a bucket that does not exist is a configuration error naming
// it: the store never creates one.
func TestMissingBucket(t *testing.T) {
	t.Parallel()
	_, err := Open(t.Context(), bucketURL(t, "no-such-bucket-here", "p"))
	t.Logf("error: %v", err)
	if err == nil || !strings.Contains(err.Error(), `bucket "no-such-bucket-here" does not exist`) || !errors.Is(err, store.ErrConfig) {
		t.Errorf("Open on a missing bucket: %v, want a configuration error naming it", err)
	}
	if _, err := adminClient(t).HeadBucket(t.Context(), &s3.HeadBucketInput{Bucket: aws.String("no-such-bucket-here")}); err == nil {
		t.Error("Open created the bucket")
	}
}

// TestCredentials: no credentials, and a wrong secret key, are configuration errors naming the
// bucket and never showing the secret. Not parallel: it changes the environment, where the
// chain finds the credentials.
func TestCredentials(t *testing.T) {
	bucket := newBucket(t)
	raw := bucketURL(t, bucket, "p")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "hunter2secret")
	_, err := Open(t.Context(), raw)
	t.Logf("wrong secret: %v", err)
	if err == nil || !strings.Contains(err.Error(), bucket) || !errors.Is(err, store.ErrConfig) || strings.Contains(err.Error(), "hunter2secret") {
		t.Errorf("Open with a wrong secret key: %v, want a configuration error naming the bucket, without the secret", err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	_, err = Open(t.Context(), raw)
	t.Logf("no credentials: %v", err)
	if err == nil || !strings.Contains(err.Error(), "credentials") || !strings.Contains(err.Error(), bucket) || !errors.Is(err, store.ErrConfig) {
		t.Errorf("Open without credentials: %v, want a configuration error about credentials", err)
	}
}

// TestNotJSON checks that an object holding something this store did not write is an error
// naming the key, for every operation, and is left as it is.
func TestNotJSON(t *testing.T) {
	t.Parallel()
	bucket := newBucket(t)
	s := openTest(t, bucketURL(t, bucket, "p"))
	for i, raw := range []string{"not json", "[1,2]", "null", `"text"`, `{"a":1} trailing`, "42", ""} {
		key := fmt.Sprintf("bad:%d", i)
		name := s.ObjectName(key)
		if _, err := adminClient(t).PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(name), Body: strings.NewReader(raw)}); err != nil {
			t.Fatal(err)
		}
		foreigndoc.Value(t, s, key, raw, ErrNotJSON)
		body, _, err := rawObject(t, bucket, name)
		if err != nil || string(body) != raw {
			t.Errorf("%q holding %q changed: %q, %v", key, raw, body, err)
		}
	}
}

// TestMissingBucketAfterOpen: a bucket deleted under an open store is an error naming it,
// never a missing record or a lost race.
func TestMissingBucketAfterOpen(t *testing.T) {
	t.Parallel()
	bucket := newBucket(t)
	s := openTest(t, bucketURL(t, bucket, ""))
	if _, err := adminClient(t).DeleteBucket(t.Context(), &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	_, gerr := s.Get(t.Context(), "k")
	cerr := s.Create(t.Context(), "k", map[string]any{"a": 1})
	perr := s.Patch(t.Context(), "k", map[string]any{"a": 2}, nil)
	for op, err := range map[string]error{"get": gerr, "create": cerr, "patch": perr} {
		t.Logf("%s: %v", op, err)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("bucket %q does not exist", bucket)) ||
			errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrConditionFailed) {
			t.Errorf("%s on a deleted bucket: %v, want an error saying the bucket does not exist", op, err)
		}
	}
}
