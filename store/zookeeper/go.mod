module github.com/leasehold/leasehold/store/zookeeper

go 1.26.0

require (
	github.com/go-zookeeper/zk v1.0.4
	github.com/leasehold/leasehold v0.1.0
	github.com/leasehold/leasehold/store/storetest/linearize v0.1.0
)

require github.com/anishathalye/porcupine v1.3.1 // indirect
