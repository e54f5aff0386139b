module github.com/leasehold/leasehold/scripts/releasetool

go 1.25.0

require golang.org/x/mod v0.40.0
