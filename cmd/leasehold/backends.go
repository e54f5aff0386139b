package main

// Every backend is linked in: importing a store module registers its URL schemes (for --store)
// and its service type (for --config); the kubernetes module registers
// Webda/KubernetesClusterService, usable with --config.
import (
	_ "github.com/leasehold/leasehold/kubernetes"     // Webda/KubernetesClusterService
	_ "github.com/leasehold/leasehold/store/etcd"     // etcd://, Webda/EtcdStore
	_ "github.com/leasehold/leasehold/store/nats"     // nats://, Webda/NatsStore
	_ "github.com/leasehold/leasehold/store/postgres" // postgres://, Webda/PostgresStore
	_ "github.com/leasehold/leasehold/store/sqlite"   // sqlite://, Webda/SQLiteStore
)
