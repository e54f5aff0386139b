//go:build (!leasehold_minimal || leasehold_kubernetes) && !leasehold_no_kubernetes

package main

import "github.com/leasehold/leasehold/kubernetes" // Webda/KubernetesClusterService

func init() { clusterTypes = append(clusterTypes, kubernetes.ServiceType) }
