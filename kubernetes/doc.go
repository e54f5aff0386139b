// Package kubernetes elects the leader on a coordination.k8s.io/v1 Lease (rule K1 of the
// design): the service type Webda/KubernetesClusterService ([ClusterService]) and the
// cluster.Lock under it ([NewLeaseLock]). Import it for its side effect to make the service
// type known to configurations:
//
//	import _ "github.com/leasehold/leasehold/kubernetes"
//
// The election engine is leasehold's (cluster.Elector): the Lease only stores its record, so
// the timing rules (E1-E8) are the same as on every other backend. The Lease is readable by
// Kubernetes tools: `kubectl get lease NAME` shows the holder, and its leaseTransitions counts
// the changes of holder, as client-go's leaderelection counts them; the term, the fencing
// token, is the annotation leasehold.dev/term (AnnotationTerm).
package kubernetes
