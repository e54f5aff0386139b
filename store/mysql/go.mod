module github.com/leasehold/leasehold/store/mysql

go 1.25.0

require (
	github.com/go-sql-driver/mysql v1.10.1
	github.com/leasehold/leasehold v0.1.0
	github.com/leasehold/leasehold/store/storetest/linearize v0.1.0
)

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	github.com/anishathalye/porcupine v1.3.1 // indirect
)
