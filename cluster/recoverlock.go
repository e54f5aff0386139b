package cluster

import "github.com/leasehold/leasehold/internal/recoverlock"

// recovering wraps l so that a panic of a faulty backend comes back as an error, and never
// takes the process down (E8).
func recovering(l Lock) Lock { return recoverlock.Lock[Record]{Store: l, Pkg: "cluster"} }
