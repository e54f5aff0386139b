// Package etcd is a [store.Store] on etcd (v3 API): each document is a JSON object stored as the
// value of a key under a prefix.
//
// Create is a transaction on CreateRevision == 0. A conditional Patch or Delete reads the
// document, checks the condition in Go (JSON values: 1 == 1.0, "1" != 1, a missing field never
// matches) and writes in a transaction on the key's ModRevision; when another writer changed the
// key in between, it reads the new value (returned by the same transaction) and tries again while
// the condition still holds, until the context ends. When the client already knows the key's
// value with its ModRevision (it read, wrote or watched it last) and that value meets the
// condition, the write starts from it without reading: one transaction, which fails and
// returns the new value if the key changed since. A key whose value is not a JSON object is
// an error naming the key ([ErrNotJSON]); it is never overwritten or deleted.
//
// # URL
//
//	etcd://[user:password@]host:port[,host:port...][/][?param=value&...]
//
// Parameters:
//
//   - prefix: prepended to every key (default "leasehold/"; empty for none).
//   - dial_timeout: bound on connecting, and on Open's first request when its context has no
//     deadline (Go duration, default "5s").
//   - keepalive: interval of gRPC keepalive pings, which detect a dead connection (Go duration,
//     default "10s", at least "10s"; "0" disables them). A ping unanswered for
//     keepalive_timeout (default "3s") closes the connection, failing the calls in flight on it.
//     Pings are sent only while a call is in flight: etcd servers close a connection pinged
//     while idle (GOAWAY "too_many_pings").
//   - tls: "true" to connect with TLS, verifying the servers against the system's roots.
//   - ca, cert, key, servername: TLS with a private authority (ca, a PEM file), a client
//     certificate (cert and key, PEM files, for a server started with --client-cert-auth), and
//     the name the servers' certificates must hold when it is not the host of the URL; any of
//     them implies tls=true. There is no way to skip the verification of the server.
//   - password_file: a file holding the password of the URL's user, instead of the URL.
//
// A user name and password are sent to etcd's authentication; they never appear in an error
// returned by this package, and the client's logs are discarded; gRPC's own log lines go to
// log/slog (errors at warning level, the rest at debug level). Every operation honours its
// context's deadline, so a cut connection fails by the deadline.
//
//	etcd://leasehold@etcd-1:2379,etcd-2:2379?ca=/etc/leasehold/ca.pem&cert=/etc/leasehold/client.pem&key=/etc/leasehold/client-key.pem&password_file=/run/secrets/etcd-password
//
// Importing the package registers the etcd URL scheme with [store.Register], and with it the
// service type Webda/EtcdStore, whose parameters are url and prefix (when given, it replaces
// the URL's prefix parameter; "" means no prefix):
//
//	"Registry": {"type": "Webda/EtcdStore", "url": "etcd://127.0.0.1:2379", "prefix": "myapp/"}
package etcd
