package kubernetes

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// restConfig builds the client configuration (K1): with a kubeconfig path (config) or a
// context, client-go's loading rules with that file and context; without either, in-cluster
// configuration when running in a pod (KUBERNETES_SERVICE_HOST is set), else the default
// loading rules (KUBECONFIG, then ~/.kube/config).
func restConfig(kubeconfig, kubecontext string) (*rest.Config, string, error) {
	if kubeconfig == "" && kubecontext == "" && os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		c, err := rest.InClusterConfig()
		if err != nil {
			return nil, "", fmt.Errorf("in-cluster configuration: %w", err)
		}
		return c, "in-cluster", nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	what := "default kubeconfig loading rules"
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
		what = fmt.Sprintf("kubeconfig %s", kubeconfig)
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: kubecontext}
	if kubecontext != "" {
		what += fmt.Sprintf(", context %q", kubecontext)
	}
	c, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		param := `parameter "config"`
		if kubeconfig == "" {
			param = "kubeconfig (KUBECONFIG or ~/.kube/config)"
		}
		if kubecontext != "" {
			param += ` with parameter "context"`
		}
		return nil, "", fmt.Errorf("%s: %w", param, err)
	}
	return c, what, nil
}
