module github.com/leasehold/leasehold/store/storetest/linearize

go 1.25.0

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/leasehold/leasehold v0.1.0
)
