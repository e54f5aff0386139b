//go:build unix

package s3

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/leasehold/leasehold/servicetest"
)

// TestServiceType: Webda/S3Store is registered, decodes its parameters strictly (A2), opens the
// store in Init without an application, works as a store.Store in the bucket and under the
// prefix its parameters name, closes it in Stop, refuses bad parameters naming them and never
// a secret, and works as an application's Registry (A4); see package servicetest.
func TestServiceType(t *testing.T) {
	t.Parallel()
	servicetest.Run(t, servicetest.Case[*Store]{
		Type: ServiceType,
		Setup: func(t *testing.T) (map[string]any, func(*testing.T, *Store, string)) {
			bucket := newBucket(t)
			// The URL names another bucket and prefix: the parameters replace them.
			raw := bucketURL(t, "not-this-bucket", "not/this/")
			return map[string]any{"url": raw, "bucket": bucket, "prefix": "svc/"}, func(t *testing.T, st *Store, key string) {
				name := "svc/" + EncodeKey(key)
				if st.Bucket() != bucket || st.ObjectName(key) != name {
					t.Errorf("store on %s/%s, want %s/%s", st.Bucket(), st.ObjectName(key), bucket, name)
				}
				if _, err := adminClient(t).HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(name)}); err != nil {
					t.Errorf("document not at %s/%s: %v", bucket, name, err)
				}
			}
		},
		Unknown: "table",
		Secret:  "secretpw1",
		Bad: map[string]string{
			`{}`:                                       `"url" is required`,
			`{"url": "postgres://x@y/z"}`:              `"url"`,
			`{"url": "not a url at all"}`:              `"url"`,
			`{"url": "s3://bucket?nonsense=1"}`:        `nonsense`,
			`{"url": "s3://AKID:secretpw1@bucket/p"}`:  `user information`,
			`{"url": "s3://bucket", "bucket": "A_B"}`:  `"A_B"`,
			`{"url": "s3://bucket", "prefix": "a//b"}`: `prefix`,
		},
	})
}
