package main

import (
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/store"
)

// Every backend is linked in by default: importing a store module registers its URL schemes
// (for --store) and its service type (for --config); the kubernetes module registers
// Webda/KubernetesClusterService, usable with --config. Each import is in a file of its own,
// backend_NAME.go, under a build constraint, so that a smaller binary can leave some out:
//
//	go build -tags leasehold_no_kubernetes,leasehold_no_etcd ./cmd/leasehold   # all but these
//	go build -tags leasehold_minimal,leasehold_postgres ./cmd/leasehold        # the file and memory stores, and these
//
// The file and memory stores are the core module's: always there.

// optionalBackend is a backend a build may leave out.
type optionalBackend struct {
	name         string   // in its build tags: leasehold_NAME, leasehold_no_NAME
	schemes      []string // its URL schemes
	serviceTypes []string // its service types in configurations
}

var optionalBackends = []optionalBackend{
	{"azblob", []string{"azblob"}, []string{"Webda/AzureBlobStore"}},
	{"dynamodb", []string{"dynamodb"}, []string{"Webda/DynamoStore"}},
	{"etcd", []string{"etcd"}, []string{"Webda/EtcdStore"}},
	{"gcs", []string{"gs"}, []string{"Webda/GCSStore"}},
	{"kubernetes", nil, []string{"Webda/KubernetesClusterService"}},
	{"mysql", []string{"mysql"}, []string{"Webda/MySQLStore"}},
	{"nats", []string{"nats"}, []string{"Webda/NatsStore"}},
	{"postgres", []string{"postgres", "postgresql"}, []string{"Webda/PostgresStore"}},
	{"redis", []string{"redis", "rediss", "redis+sentinel", "rediss+sentinel", "redis+cluster", "rediss+cluster"}, []string{"Webda/RedisStore"}},
	{"s3", []string{"s3"}, []string{"Webda/S3Store"}},
	{"sqlite", []string{"sqlite"}, []string{"Webda/SQLiteStore"}},
	{"zookeeper", []string{"zk"}, []string{"Webda/ZooKeeperStore"}},
}

// linked reports whether the build has the backend: whether its registrations are there.
func (b optionalBackend) linked() bool {
	for _, s := range b.schemes {
		if slices.Contains(store.Schemes(), s) {
			return true
		}
	}
	for _, t := range b.serviceTypes {
		if slices.Contains(leasehold.ServiceTypes(), t) {
			return true
		}
	}
	return false
}

// missingScheme returns the backend of a URL scheme that this build left out.
func missingScheme(scheme string) (optionalBackend, bool) {
	for _, b := range optionalBackends {
		if slices.Contains(b.schemes, strings.ToLower(scheme)) && !b.linked() {
			return b, true
		}
	}
	return optionalBackend{}, false
}

// missingServiceType returns the backend of a service type that this build left out, as a
// configuration's service's has (typed with or without its namespace).
func missingServiceType(sc leasehold.ServiceConfig) (optionalBackend, string, bool) {
	for _, b := range optionalBackends {
		for _, t := range b.serviceTypes {
			if sc.HasType(t) && !b.linked() {
				return b, t, true
			}
		}
	}
	return optionalBackend{}, "", false
}

// missingText says that the build lacks b and how to build it in, from the tags this binary
// was built with when its build information has them.
func (b optionalBackend) missingText() string {
	tags, known := buildTags()
	var keep []string
	for _, t := range tags {
		if t != "leasehold_no_"+b.name {
			keep = append(keep, t)
		}
	}
	if !known {
		return fmt.Sprintf("this leasehold is built without the %s backend (build tags leasehold_no_%[1]s, or leasehold_minimal without leasehold_%[1]s)", b.name)
	}
	if slices.Contains(keep, "leasehold_minimal") {
		keep = append(keep, "leasehold_"+b.name)
	}
	build := "go build"
	if len(keep) > 0 {
		build += " -tags " + strings.Join(keep, ",")
	}
	return fmt.Sprintf("this leasehold is built without the %s backend (-tags %s); build it in: %s ./cmd/leasehold",
		b.name, strings.Join(tags, ","), build)
}

// buildTags returns the build tags of this binary, and whether its build information says.
func buildTags() ([]string, bool) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil, false
	}
	for _, s := range info.Settings {
		if s.Key == "-tags" {
			return strings.Split(s.Value, ","), true
		}
	}
	return nil, true
}

// missingBackends names the backends this build left out, for version.
func missingBackends() []string {
	var out []string
	for _, b := range optionalBackends {
		if !b.linked() {
			out = append(out, b.name)
		}
	}
	return out
}
