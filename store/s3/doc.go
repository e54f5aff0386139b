// Package s3 is a [store.Store] on an Amazon S3 bucket, or a bucket of an S3-compatible
// service: each document is a JSON object stored as one object.
//
// # Writes
//
// Every write is conditional on the object's state its read returned. Create puts the object
// with If-None-Match: * (no object under the name); Patch and Delete read the object, check
// the condition in Go (JSON values: 1 == 1.0, "1" != 1, a missing field never matches) and
// write with If-Match on the ETag the read returned. A refused condition (412
// PreconditionFailed, 409 ConditionalRequestConflict, AWS's answer to conditional writes
// racing on one object, or 404 for an If-Match on an object deleted meanwhile) is a lost
// compare-and-swap: the object is read again and the condition checked again, until the
// context ends. A Create whose If-None-Match fails reads the object: a record is ErrExists.
//
// Writes are sent once: the SDK's retries are off for them (they stay on for reads). A
// retried write whose first attempt landed would be refused by that very attempt, and the
// store would answer a lost race (ErrExists, ErrConditionFailed) for a write that took effect.
// A write that gets no answer (a 5xx, a broken connection, the context's end) is an unknown
// outcome (T7 of docs/design.md).
//
// Reads are GetObject, strongly consistent on S3 since December 2020: a read sees every write
// acknowledged before it was sent. An S3-compatible service must be as well.
//
// # Delete
//
// The URL's delete parameter says how a record is removed:
//
//   - if-match: DeleteObject with If-Match on the ETag read (AWS general purpose buckets,
//     since 2025).
//   - tombstone: a tombstone written with If-Match on the ETag read: an empty object with the
//     metadata leasehold-record: deleted, which Get reports as missing (ErrNotFound) and Create
//     replaces with If-Match on its ETag. For services without conditional deletes.
//   - auto (the default): Open probes the service, on an object of its own below the prefix,
//     and takes if-match when it honours If-Match on DeleteObject both on a missing object
//     (404 or 412, as AWS answers) and on an existing one (412), tombstone otherwise.
//     versitygw answers 204 to a conditional delete of a missing object, which would let two
//     Deletes of one record both succeed: it gets tombstones.
//
// Every mode reads tombstones, so stores opened in different modes on one prefix agree.
//
// # Keys
//
// Object names are the prefix followed by the key, encoded reversibly ([EncodeKey]): ASCII
// letters, digits and '-' stay as they are; every other byte of the key's UTF-8 text, '_',
// '/' and '.' included, becomes '_' followed by two upper-case hex digits. "cluster:leader"
// is stored as "PREFIX/cluster_3Aleader". No name holds a '/' below the prefix, a '.' or a
// character that S3 or a server keeping objects as files treats apart.
//
// # URL
//
//	s3://BUCKET[/PREFIX][?param=value&...]
//
// The prefix is the URL's path without its leading '/'; one that does not end with '/' gets
// one. Parameters:
//
//   - bucket: the bucket, replacing the URL's host.
//   - prefix: the prefix of the object names, replacing the URL's path.
//   - region: the bucket's region (default: the AWS chain's, AWS_REGION or the profile's;
//     us-east-1 with an endpoint and no region).
//   - endpoint: the URL of an S3-compatible service or an emulator (http://127.0.0.1:7070),
//     instead of AWS's.
//   - path_style: "true" to name the bucket in the path (http://host/BUCKET/KEY) rather than
//     in the host name, as most S3-compatible services need (default "false").
//   - delete: auto (default), if-match or tombstone (see above).
//   - profile: the shared configuration profile to load (default: AWS_PROFILE's, or default).
//
// Credentials come from the AWS SDK's default chain (config.LoadDefaultConfig): the
// environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), the shared
// configuration and credentials files (SSO, assumed roles, credential processes), web identity
// (EKS service accounts, AWS_WEB_IDENTITY_TOKEN_FILE), the ECS container credentials, and the
// EC2 instance metadata. Never from the URL: user information in it is an error.
//
// Open checks that the bucket exists (HeadBucket): the store never creates it, and a missing
// bucket is a configuration error naming it. A bucket with versioning keeps every write as a
// version: leave versioning off on a bucket of leases, or expire noncurrent versions.
//
// The store does not watch (no notifications): followers read every R. Close closes the
// idle connections; a closed store answers [ErrClosed].
//
// Importing the package registers the s3 URL scheme with [store.Register], and with it the
// service type Webda/S3Store, whose parameters are url, bucket and prefix (when given, they
// replace the URL's bucket and prefix):
//
//	"Registry": {"type": "Webda/S3Store", "url": "s3://my-bucket/leases/?region=eu-west-1"}
package s3
