// Package nats is a [store.Store] on a NATS JetStream key-value bucket: each document is a JSON
// object stored as the value of a key.
//
// Create writes on the key's revision: none for a key that never held a value, the delete
// marker's for one that was deleted (it reads the key's last message from the bucket's stream,
// KV_<bucket>, to tell a marker from a value); a key that holds a value is ErrExists. It does
// not use the bucket's own Create, which answers "key exists" for a deleted key when its
// context ends while it reads the marker: here that is an unknown outcome, the context's error
// (T7 of docs/design.md: an answer is definite or unknown, never both). When another writer
// changed the key in between, Create reads it again, until its context ends.
//
// A conditional Patch or Delete reads the entry, checks the condition in Go (JSON values:
// 1 == 1.0, "1" != 1, a missing field never matches) and writes with Update (or Delete) on the
// entry's revision; when another writer changed the key in between, it reads again and retries
// while the condition still holds, until the context ends. A key whose value is not a JSON object is an error naming the key
// ([ErrNotJSON]); it is never overwritten or deleted.
//
// # Keys
//
// NATS keys allow only the characters -/_=.a-zA-Z0-9, and dots separate subject tokens, while
// store keys are any non-empty string ("cluster:leader"). Keys are therefore encoded reversibly
// ([EncodeKey]): ASCII letters, digits, '-' and '/' stay as they are; every other byte of the
// key's UTF-8 text, '=', '.' and '_' included, becomes '=' followed by two upper-case hex digits.
// "cluster:leader" is stored as "cluster=3Aleader".
//
// # URL
//
//	nats://[user:password@|token@]host:port[,host:port...][?param=value&...]
//
// Parameters:
//
//   - bucket: the key-value bucket (default "leasehold").
//   - create_bucket: "true" (default) creates the bucket when it does not exist, with history 1;
//     "false" makes a missing bucket an error.
//   - replicas: the new bucket's replicas (default 1). On a cluster, 3 keeps the bucket through
//     the loss of one server.
//   - storage: the new bucket's storage, "file" (default) or "memory".
//   - dial_timeout: bound on connecting, on each of Open's requests to JetStream (one that gets
//     no answer is tried again, until Open's context ends), and on Open's checks when its
//     context has no deadline (Go duration, default "5s").
//   - ping_interval: how often the client pings the server to find a dead connection (Go
//     duration, default "10s"; two unanswered pings close it).
//   - reconnect_wait: pause between attempts to reconnect to a server (Go duration, default
//     "1s").
//   - tls: "true" to require TLS.
//   - ca, cert, key, servername: TLS with a private authority (ca, a PEM file), a client
//     certificate (cert and key, PEM files, for a server whose tls block has verify: true), and
//     the name the server's certificate must hold when it is not the host of the URL; any of
//     them implies tls=true. There is no way to skip the verification of the server.
//   - creds: a credentials file (a user JWT and its nkey, as nsc writes it), for a server in
//     operator mode.
//   - nkey: a file holding a user's private nkey (the line starting with SU that `nk -gen user`
//     prints), for a server whose users are nkeys.
//   - token_file: a file holding the server's authorization token.
//   - password_file: a file holding the password of the URL's user (nats://user@host).
//
// One kind of credentials at most: the URL's user information, creds, nkey or token_file. The
// files are read when the store opens (creds and nkey again at each connection); their content
// never appears in an error.
//
// The client reconnects for ever, and does not buffer writes while disconnected: a write made
// during a disconnection fails at once instead of landing later, after its caller gave up. A
// call waiting for its answer when the connection is lost ends at once too, with an error (its
// outcome unknown): the answer cannot come on the next connection, and a leader whose server
// died tries again through another server at its next attempt instead of waiting out this one.
// Every operation honours its context's deadline.
//
// # Clusters
//
// The URL may name several servers of a cluster; the client connects to one of them, and to
// another when it fails. Reads go to the bucket stream's leader (the JetStream API's
// STREAM.MSG.GET), never through a direct get: KV buckets are created with allow_direct, which
// lets any replica answer from its own copy, one a write acknowledged to this very client may
// not have reached yet. A read through the leader sees every write acknowledged before it was
// sent (a server answers as the leader only once it has applied them), for buckets with
// allow_direct or without. A leader cut off from the others answers until it notices, as
// every JetStream request does.
//
// nats-server releases before 2.9.21 check a write's expected revision before the replicas
// agree on it, not when it is applied, so two compare-and-swaps on one revision of a replicated
// bucket can both succeed. Open refuses a bucket with more than one replica, whether it would
// create it or finds it, when the server it connected to is older than that, with a
// configuration error: upgrade every server of the cluster (Open sees only its own).
//
// Open checks that the server has JetStream; if not, it fails with an error saying so.
// Credentials in the URL never appear in an error returned by this package, and the client
// logs nothing.
//
// Importing the package registers the nats URL scheme with [store.Register], and with it the
// service type Webda/NatsStore, whose parameters are url and bucket (when given, it replaces
// the URL's bucket parameter):
//
//	"Registry": {"type": "Webda/NatsStore", "url": "nats://127.0.0.1:4222", "bucket": "myapp"}
package nats
