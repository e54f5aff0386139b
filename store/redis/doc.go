// Package redis is a [store.Store] on Redis: each document is a JSON object held as a Redis
// string under a key prefix, so several applications (or tests) can share one database.
//
// Create is SET NX, in a Lua script. A conditional Patch or Delete is one Lua script (EVALSHA,
// loaded on first use) that reads the document, compares the condition's field as a JSON value
// (1 == 1.0, "1" != 1, objects and arrays by value, a missing field never matches) and writes,
// atomically: of N writers holding the same condition exactly one wins. The script keeps the members it does
// not patch byte for byte, so numbers keep their full precision. A key that holds something
// other than a JSON object is an error naming the key ([ErrNotJSON]); it is never overwritten or
// deleted.
//
// Writes that arrive while a few others are in flight are sent together, as one go-redis
// pipeline (one write and one read of a connection for hundreds of scripts), so that one
// process renewing thousands of leases is not held back by the client's cost per command. A
// pipeline is not a transaction: each script runs atomically on its own and answers its own
// caller, in the order the writes arrived; a write that finds the store idle is sent at once,
// alone, as before.
//
// The store watches keys (store.Watcher) without any server configuration: each write's script
// also publishes the key's new state on the Pub/Sub channel "watch:" followed by the Redis key,
// and all the watches of a Store share one Pub/Sub connection (watch.go says how). Writes made
// by anything but this store are not seen by its watches.
//
// # URL
//
//	redis://[[user]:password@]host[:port][/db][?param=value&...]
//	rediss://...   (TLS)
//
// Parameters read by this package:
//
//   - prefix: prepended to every key (default "leasehold:"; empty for none).
//   - tls, ca, cert, key, servername: TLS with a private authority (ca, a PEM file), a client
//     certificate (cert and key, PEM files, for a server with tls-auth-clients yes), and the
//     name the server's certificate must hold when it is not the host of the URL. rediss://
//     is TLS with the system's authorities; any of these parameters makes a redis:// URL TLS
//     too. They cannot be combined with go-redis's skip_verify.
//   - password_file: a file holding the password (of the URL's ACL user, or of the default
//     user), instead of the URL.
//   - wait_replicas, wait_timeout: after each write, in the same round trip, WAIT for that many
//     replicas to acknowledge it, for at most wait_timeout (a Go duration, 1ms or more, shorter
//     than read_timeout; default 1s). A write fewer replicas acknowledged is not a success: its
//     error, [ErrNotReplicated], is an unknown outcome (the primary made it; a failover may lose
//     it or keep it). An answer that made no write (condition failed, key exists, not found)
//     stays as it is. See wait.go for what WAIT does not promise.
//
// Redis behind Sentinel is named by its Sentinels (a host without a port has 26379), and the
// name they monitor the primary by:
//
//	redis+sentinel://[[user]:password@]sentinel:26379[,sentinel:26379...][/db]?master=<name>[&param=value...]
//	rediss+sentinel://...   (TLS to the Sentinels and to the servers)
//
// The user information and password_file are the servers' credentials, as above; the
// Sentinels' own are sentinel_user and sentinel_password_file (a file, never the URL). Every
// other parameter is a redis:// URL's, TLS ones included. The client (go-redis's failover
// client) asks a Sentinel for the primary and follows it through failovers; the watches too,
// once their connection to the old primary fails or the Sentinels demote it. A redis:// URL
// with several hosts is refused.
//
// A Redis Cluster (Redis 7.0 or later, or Valkey) is named by some of its nodes:
//
//	redis+cluster://[[user]:password@]host:6379[,host:6379...][/0][?param=value...]
//	rediss+cluster://...   (TLS to every node)
//
// It takes the parameters of a redis:// URL, but no database (a cluster has database 0 only).
// Each record's Redis key holds its key in a hash tag (prefix + "{" + key + "}"), and its watch
// is a sharded Pub/Sub channel named as that key (SSUBSCRIBE, SPUBLISH), so that a record's
// scripts and its channel are in one slot; cluster.go says more. The client (go-redis's cluster
// client) follows slots that move (MOVED, ASK) and a shard's failover; with wait_replicas,
// WAIT goes to the key's primary with the write.
//
// The parameters not named here go to go-redis (github.com/redis/go-redis/v9, ParseURL), among them
// dial_timeout, read_timeout and write_timeout (Go durations such as "2s", or seconds),
// pool_size, protocol, client_name and skip_verify. The store never sends a command twice: a
// write whose connection failed may have run, and sent again it would answer falsely that its
// condition failed, so max_retries may only be 0 or -1 (none), and is refused otherwise.
//
//	rediss://leasehold@redis:6380/0?ca=/etc/leasehold/ca.pem&cert=/etc/leasehold/client.pem&key=/etc/leasehold/client-key.pem&password_file=/run/secrets/redis-password
//
// Operations honour their context's deadline on the wire (go-redis ContextTimeoutEnabled), so a
// cut connection fails by the deadline even when read_timeout is longer. Open pings the server.
//
// Importing the package registers the redis, rediss, redis+sentinel, rediss+sentinel,
// redis+cluster and rediss+cluster URL schemes with [store.Register], and with them the service type Webda/RedisStore, whose
// parameters are url and prefix (when given, it replaces the URL's prefix parameter; "" means
// no prefix):
//
//	"Registry": {"type": "Webda/RedisStore", "url": "redis://127.0.0.1:6379/0", "prefix": "myapp:"}
//
// Credentials in the URL never appear in an error returned by this package.
package redis
