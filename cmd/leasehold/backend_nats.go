//go:build (!leasehold_minimal || leasehold_nats) && !leasehold_no_nats

package main

import _ "github.com/leasehold/leasehold/store/nats" // nats://, Webda/NatsStore
