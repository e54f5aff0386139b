// Package zookeeper is a [store.Store] on a ZooKeeper ensemble (3.5 or later): each document is
// a JSON object stored as the data of a persistent znode under a chroot, on the client
// github.com/go-zookeeper/zk.
//
// Create creates the record's znode, which the server refuses when it exists. A conditional
// Patch or Delete reads the znode, checks the condition in Go (JSON values: 1 == 1.0, "1" != 1,
// a missing field never matches) and sets the znode on the version it read; when another writer
// changed it in between, it reads again and tries again while the condition holds, until the
// context ends. Delete empties the znode rather than remove it: a znode created again would
// start at version 0, and a write based on a version read before the deletion could land on a
// record it never checked; an empty znode is no record, and Create sets it on its version. A
// znode holding data that is not a JSON object is an error naming the key ([ErrNotJSON]); it
// is never overwritten or emptied.
//
// Every read, that of a conditional write included, is a sync of the znode and then the read:
// a server answers reads from its own copy, which may lag the leader's, and sync has it catch
// up first. The client takes no context; each call runs on a goroutine the store's Close waits
// for, and returns at its context's end, its outcome then unknown. No call is sent twice: a
// write whose connection ends before its answer is an unknown outcome.
//
// Watch arms a one-shot ZooKeeper watch with each read, and arms the next when it fires. The
// watches stand on a client of their own, with a session of its own, which is never connected
// again: when its connection ends, the store closes it and dials another, on which every watch
// arms and reads again (see backend.Watch in watch.go). The requests' client sets no watch.
// So neither client holds a watch when it reconnects with its session, which the library
// would send again on the new connection, racing with its own receiving goroutine. The
// heartbeats are syncs on the watch's client.
//
// # URL
//
//	zk://[user@]host:port[,host:port...][/chroot][?param=value&...]
//
// The path is the chroot, the znode the records live under (default /leasehold); Open creates
// it and its parents when missing, as persistent znodes with the store's ACL. A server without
// a port is on 2181. Parameters:
//
//   - session_timeout: the session timeout asked of the servers (Go duration, default "10s"),
//     which they bound to between 2 and 20 ticks. The client gives up a connection silent for
//     two thirds of it and tries the next server.
//   - dial_timeout: how long Open waits for a session when its context has no deadline (Go
//     duration, default "5s").
//   - acl: the ACL of the znodes the store creates: "open" (default, world:anyone with every
//     permission), "creator" (only the URL's digest user), "creator_read" (the user, and
//     anyone may read). The last two need credentials.
//   - password_file, password_env: the digest password of the URL's user, from a file or from
//     the environment variable the parameter names. A password in the URL is refused.
//   - tls, ca, cert, key, servername: TLS as for the other stores (a server with a
//     secureClientPort); any of the last four implies tls=true.
//
// The password never appears in an error returned by this package, and the client's logs are
// discarded. Every operation honours its context's deadline.
//
//	zk://leasehold@zk-1:2181,zk-2:2181,zk-3:2181/myapp?acl=creator&password_file=/run/secrets/zk
//
// Importing the package registers the zk URL scheme with [store.Register], and with it the
// service type Webda/ZooKeeperStore, whose parameters are url, session_timeout, acl,
// password_file and password_env (each, when given, replaces the URL's parameter):
//
//	"Registry": {"type": "Webda/ZooKeeperStore", "url": "zk://127.0.0.1:2181/myapp"}
package zookeeper
