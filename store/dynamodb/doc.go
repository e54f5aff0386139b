// Package dynamodb is a [store.Store] on an Amazon DynamoDB table: each document is one item,
// under its key.
//
// # Table
//
// The table has one string partition key, "id" ([KeyAttribute]), and no sort key. An item
// holds three attributes: id (S), the store's key ("cluster:leader"); doc (S), the document's
// JSON text; ver (S), its version, a random token every write replaces. Open checks the key
// schema with DescribeTable, and creates a missing table (PAY_PER_REQUEST) only when the URL
// says create_table=true: otherwise a missing table is an error naming it and the parameter.
//
// # Operations
//
// Reads are strongly consistent (GetItem with ConsistentRead). Create is a PutItem conditioned
// on attribute_not_exists(id): a failed condition is ErrExists. A conditional Patch or Delete
// reads the item, checks the condition in Go (JSON values: 1 == 1.0, "1" != 1, a missing field
// never matches) and writes with PutItem (or DeleteItem) conditioned on "ver = <the version
// read>"; a failed condition is a lost race, and the write starts over from the item the
// server returns with it (ReturnValuesOnConditionCheckFailure ALL_OLD), or from a new read,
// while the condition holds, until the context ends (see driver.ReadCheckWrite). The version
// is a random token rather than a counter, so that an item deleted and created again never
// matches a version read before: a counter starting again at 1 would.
//
// Writes are retried only after throttling errors, by which DynamoDB refuses a request
// without running it; no write is sent again after an error that leaves its outcome unknown
// (a 5xx answer, a timeout, a broken connection): see retry.go. Every operation honours its
// context's deadline; a write cut by it is an unknown outcome (T7 of docs/design.md).
//
// An item that holds no document this store wrote (no doc or ver attribute, or a doc that is
// not the JSON text of an object) is an error naming the key ([ErrNotJSON]) for every
// operation; it is never overwritten or deleted. DynamoDB has no notification: followers read
// every R.
//
// # URL
//
//	dynamodb://TABLE[?region=REGION&endpoint=URL&profile=NAME&create_table=true]
//
// Parameters:
//
//   - table: the table, instead of the URL's host (for a configuration's table parameter).
//   - region: the AWS region (default: the AWS configuration's, AWS_REGION or the profile's).
//   - endpoint: the DynamoDB endpoint, http(s)://host:port, for a local emulator or a
//     compatible service (default: the region's).
//   - profile: the profile of the shared AWS configuration files (default: AWS_PROFILE, or
//     "default").
//   - create_table: "true" creates a missing table; "false" (default) makes it an error.
//   - open_timeout: bound on Open when its context has no deadline (Go duration, default 30s).
//
// Credentials never come from the URL (user information in it is an error), but from the
// AWS SDK's default chain: the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN), the shared configuration and credentials files (profile, SSO, process),
// web identity (EKS service accounts, AWS_WEB_IDENTITY_TOKEN_FILE), the container's and the
// EC2 instance's metadata.
//
// Importing the package registers the dynamodb URL scheme with [store.Register], and with it
// the service type Webda/DynamoStore, whose parameters are url, table and region (when given,
// each replaces the URL's parameter of the same name):
//
//	"Registry": {"type": "Webda/DynamoStore", "url": "dynamodb://leasehold?region=eu-west-1"}
package dynamodb
