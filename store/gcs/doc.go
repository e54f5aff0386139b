// Package gcs is a [store.Store] on Google Cloud Storage: each document is a JSON object
// stored as one object of a bucket, under a prefix.
//
// # URL
//
//	gs://BUCKET[/PREFIX][?param=value&...]
//
// The prefix (the URL's path) is a folder: gs://my-bucket/leasehold keeps its objects under
// "leasehold/". Parameters:
//
//   - endpoint: the http:// or https:// URL of an emulator or a compatible service, whose JSON
//     API is under /storage/v1/ (default: Google's, or STORAGE_EMULATOR_HOST's when set).
//   - anonymous: "true" sends no credentials. The default is true for a plain http endpoint,
//     or when STORAGE_EMULATOR_HOST is set and the URL has no endpoint (neither carries
//     credentials: a token sent in clear could be replayed), false otherwise; false with an
//     http endpoint is refused.
//   - open_timeout: bound on Open when its context has no deadline (Go duration, default
//     "10s").
//
// Credentials come from Google's application default chain (GOOGLE_APPLICATION_CREDENTIALS,
// gcloud's application default login, the metadata server of GCE, GKE or Cloud Run), never
// from the URL: user information in it is an error. Errors name the bucket and the parameter
// at fault. The store never creates the bucket: Open lists at most one object under the
// prefix, and a missing bucket is [ErrBucketNotFound], naming it. [Permissions] lists the IAM
// permissions the store's requests need.
//
// # Objects
//
// The document under key is the object PREFIX + [EncodeKey](key): ASCII letters, digits, '-'
// and '_' stay as they are, every other byte becomes '%' and two upper-case hex digits
// ("cluster:leader" is "cluster%3Aleader"), so that no key makes a folder or a name GCS
// discourages. A key whose object name would pass GCS's 1024 bytes is store.ErrInvalid. The
// content is the document's JSON, with Content-Type application/json and Cache-Control
// no-store. An object that does not hold a JSON object is an error naming the key
// ([ErrNotJSON]); it is never overwritten or deleted.
//
// # Writes
//
// Get reads the object's content and generation in one request; reads in Cloud Storage are
// strongly consistent. Create writes on condition that the object does not exist
// (ifGenerationMatch=0): a 412 is store.ErrExists. Patch and Delete read the object, check the
// condition in Go (JSON values: 1 == 1.0, "1" != 1, a missing field never matches), and write
// or delete on the generation read (ifGenerationMatch); a 412, or a 404 for an object deleted
// in between, is a lost race, and the object is read again while the context lasts. Writes
// are sent once, never retried by the client (see the comment on writeOnce in gcs.go): a write
// without an answer is an unknown outcome, never a false lost race. Each write carries its
// CRC32C, so that the server refuses a body cut short. Every request honours its context.
//
// Cloud Storage takes about one write per second to one object: the store says so through
// store.MinWriteInterval, and an election over it whose renew interval is under a second is
// refused when it is constructed. There are no notifications: followers read every R.
//
// Importing the package registers the gs URL scheme with [store.Register], and with it the
// service type Webda/GCSStore, whose parameters are url, endpoint and anonymous:
//
//	"Registry": {"type": "Webda/GCSStore", "url": "gs://my-bucket/leasehold"}
package gcs
