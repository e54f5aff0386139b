//go:build (!leasehold_minimal || leasehold_etcd) && !leasehold_no_etcd

package main

import _ "github.com/leasehold/leasehold/store/etcd" // etcd://, Webda/EtcdStore
