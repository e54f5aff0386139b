module github.com/leasehold/leasehold/store/sqlite

go 1.25.0

require (
	github.com/leasehold/leasehold v0.1.0
	github.com/leasehold/leasehold/store/storetest/linearize v0.1.0
	modernc.org/sqlite v1.59.0
)

require (
	github.com/anishathalye/porcupine v1.3.1 // indirect
	github.com/dustin/go-humanize v1.1.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/ncruces/go-strftime v1.1.0 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	golang.org/x/sys v0.47.0 // indirect
	modernc.org/libc v1.76.0 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.12.1 // indirect
)
