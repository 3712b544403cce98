package cluster

import (
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// credentials identify a kubeconfig user: a client certificate or a token.
type credentials struct {
	certFile, keyFile string
	token             string
}

// writeKubeconfig writes a self-contained kubeconfig (certificates inlined)
// for server, trusting only caFile.
func writeKubeconfig(path, server, caFile string, creds credentials) error {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("reading CA for kubeconfig %s: %w", path, err)
	}
	user := &clientcmdapi.AuthInfo{Token: creds.token}
	if creds.certFile != "" {
		if user.ClientCertificateData, err = os.ReadFile(creds.certFile); err != nil {
			return fmt.Errorf("reading client certificate for kubeconfig %s: %w", path, err)
		}
		if user.ClientKeyData, err = os.ReadFile(creds.keyFile); err != nil {
			return fmt.Errorf("reading client key for kubeconfig %s: %w", path, err)
		}
	}
	const name = "muster-local"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[name] = user
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// restConfigFromFile loads a kubeconfig as a client config.
func restConfigFromFile(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	cfg.QPS = 100
	cfg.Burst = 200
	return cfg, nil
}
