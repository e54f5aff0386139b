// Package azblob is a [store.Store] on Azure Blob Storage: each document is a JSON object
// stored as a block blob of one container, one blob per key.
//
// # Records
//
// The document under key is the blob PREFIX + EncodeKey(key) + ".json", its content the
// document's JSON (Content-Type application/json). Store keys are any non-empty string, and
// blob names treat '/' as a virtual directory and refuse some trailing characters, so keys are
// escaped reversibly ([EncodeKey]): ASCII letters, digits, '-' and '_' stay as they are; every
// other byte of the key's UTF-8 text becomes '=' followed by two upper-case hex digits.
// "cluster:leader" is stored as "cluster=3Aleader.json". A key whose blob name would be longer
// than Azure's 1024 bytes is refused (store.ErrInvalid).
//
// # Writes
//
// Every write is conditional on the blob's ETag, which the service changes at each write:
//
//   - Create is a Put Blob with If-None-Match: *. A blob already there answers 409
//     BlobAlreadyExists (412 ConditionNotMet is taken as the same answer): store.ErrExists.
//   - A Patch reads the blob (Get Blob: the document and its ETag), checks the condition in Go
//     (JSON values: 1 == 1.0, "1" != 1, a missing field never matches) and puts the patched
//     document with If-Match on that ETag; a Delete deletes the blob with If-Match. 412
//     ConditionNotMet (the blob changed) or 404 BlobNotFound (it was deleted) means another
//     writer came in between: the blob is read again and the condition checked again, until
//     the context ends (driver.ReadCheckWrite).
//
// Reads are strongly consistent: Azure Storage answers a read with the last write it
// acknowledged.
//
// A write is sent once. azcore's retries (of requests that failed on their connection, timed
// out, or got 408, 429 or 5xx) are off for writes: a retried write whose first attempt landed
// would find the ETag changed by itself and report a lost race, or "exists" for its own
// Create. A write whose answer did not come is an unknown outcome, the context's error or the
// transport's (T7 of docs/design.md); the Lock reads the blob at its next attempt. Reads keep
// azcore's retries (three, with exponential back-off, within the call's context).
//
// The store does not use blob leases (Lease Blob). A blob lease lasts 15 to 60 seconds or
// for ever, so it cannot carry a leasehold lease's duration or its holder's times; it locks
// the blob against writes without the lease ID, so a crashed holder's record could not be
// taken over before the blob lease ran out; and the emulator (Azurite) renews expired blob
// leases. The lease's times live in the document, and the ETag makes each write atomic.
//
// There is no watch (Blob Storage does not notify a client): followers poll, every R.
//
// A blob under the prefix that does not hold a JSON object is an error naming it
// ([ErrNotJSON]); it is never overwritten or deleted.
//
// # URL
//
//	azblob://ACCOUNT/CONTAINER[/PREFIX][?param=value&...]
//
// ACCOUNT is the storage account, CONTAINER an existing container (the store never creates
// one; a missing container is an error naming it, [ErrContainerNotFound]), and PREFIX, when
// given, is put before every blob name as it is ("leasehold/" keeps the records in a virtual
// directory).
//
// Parameters:
//
//   - endpoint: the account's blob service URL, https://ACCOUNT.blob.core.windows.net by
//     default; for an emulator or a sovereign cloud (http://127.0.0.1:10000/devstoreaccount1
//     for Azurite).
//   - identity: "default" (the default) authenticates with azidentity's
//     DefaultAzureCredential: environment (AZURE_TENANT_ID, AZURE_CLIENT_ID and a secret or
//     certificate), workload identity, managed identity, then the Azure CLI and Azure
//     Developer CLI logins. It needs an https endpoint. "connection_string" authenticates with
//     a connection string (an account key, or a shared access signature) read from the
//     environment, never from the URL.
//   - connection_string_env: the environment variable holding the connection string
//     (AZURE_STORAGE_CONNECTION_STRING by default); naming one implies
//     identity=connection_string. The string's AccountName must be the URL's account; its
//     BlobEndpoint is the endpoint unless the endpoint parameter is given.
//
// Open checks that the container exists and that the credentials may read it, with a Get
// Blob Properties of a blob the store never writes; without a deadline on its context, it
// gives up after 30 seconds. Refused credentials and a missing container are configuration
// errors (store.ErrConfig). The connection string's key or signature never appears in an
// error returned by this package.
//
// Importing the package registers the azblob URL scheme with [store.Register], and with it
// the service type Webda/AzureBlobStore, whose parameters are url, endpoint and
// connection_string_env (each, when given, replaces the URL's parameter):
//
//	"Registry": {"type": "Webda/AzureBlobStore", "url": "azblob://myaccount/leases/myapp/"}
package azblob
