//go:build unix && (!leasehold_minimal || leasehold_s3) && !leasehold_no_s3

package main

import (
	"bytes"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/leasehold/leasehold/internal/cloudemu"
	s3store "github.com/leasehold/leasehold/store/s3"
)

func init() {
	cloudStores = append(cloudStores, cloudStore{name: "s3", kind: cloudemu.S3, setup: func(t *testing.T, e *cloudemu.Emulator) (string, map[string]string, func(*testing.T, string, []byte)) {
		client := s3.New(s3.Options{
			Region:       "us-east-1",
			BaseEndpoint: aws.String(e.Endpoint),
			UsePathStyle: true,
			Credentials:  credentials.NewStaticCredentialsProvider(cloudemu.AccessKey, cloudemu.SecretKey, ""),
		})
		const bucket = "leasehold-cmd"
		if _, err := client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatal(err)
		}
		url := "s3://" + bucket + "/app?endpoint=" + e.Endpoint + "&path_style=true&region=us-east-1"
		env := map[string]string{
			"AWS_ACCESS_KEY_ID": cloudemu.AccessKey, "AWS_SECRET_ACCESS_KEY": cloudemu.SecretKey,
			"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull, "AWS_EC2_METADATA_DISABLED": "true",
		}
		put := func(t *testing.T, key string, raw []byte) {
			st, err := s3store.Open(t.Context(), url)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if _, err := client.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(st.ObjectName(key)), Body: bytes.NewReader(raw)}); err != nil {
				t.Fatal(err)
			}
		}
		return url, env, put
	}})
}
