package kubernetes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ServiceAccountNamespaceFile is where Kubernetes mounts the namespace of a pod's service
// account.
const ServiceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// namespaceSource is where resolveNamespace found the namespace, for the start log line.
type namespaceSource string

const (
	fromParameter      namespaceSource = `parameter "namespace"`
	fromEnvironment    namespaceSource = "POD_NAMESPACE"
	fromServiceAccount namespaceSource = "service account"
	fromDefault        namespaceSource = "default"
)

// resolveNamespace picks the Lease's namespace (K1): the parameter, else POD_NAMESPACE (set
// from the downward API), else the service account's namespace file at saFile, else
// "default". The first source that is set wins; a value that is not a valid namespace name is
// an error naming its source rather than a fall-through, so a typo is never silently replaced
// by another namespace.
func resolveNamespace(param string, getenv func(string) string, saFile string) (string, namespaceSource, error) {
	ns, src := param, fromParameter
	if ns == "" {
		ns, src = getenv("POD_NAMESPACE"), fromEnvironment
	}
	if ns == "" {
		data, err := os.ReadFile(saFile)
		switch {
		case err == nil:
			ns, src = strings.TrimSpace(string(data)), fromServiceAccount
			if ns == "" {
				return "", src, fmt.Errorf("namespace file %s is empty", saFile)
			}
		case !errors.Is(err, fs.ErrNotExist):
			return "", fromServiceAccount, fmt.Errorf("namespace file: %w", err)
		}
	}
	if ns == "" {
		return "default", fromDefault, nil
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		where := string(src)
		if src == fromServiceAccount {
			where = "namespace file " + saFile
		}
		return "", src, fmt.Errorf("%s: %q is not a valid namespace name: %s", where, ns, strings.Join(errs, "; "))
	}
	return ns, src, nil
}
