module github.com/leasehold/leasehold/store/redis

go 1.25.0

require (
	github.com/leasehold/leasehold v0.1.0
	github.com/leasehold/leasehold/store/storetest/linearize v0.1.0
	github.com/redis/go-redis/v9 v9.22.0
)

require (
	github.com/anishathalye/porcupine v1.3.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
