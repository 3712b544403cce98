package cluster

import (
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ImpersonatingClient returns an admin client that acts as user, for tests
// that check what the cluster lets that user do.
func (c *Cluster) ImpersonatingClient(user string) kubernetes.Interface {
	cfg := rest.CopyConfig(c.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return kubernetes.NewForConfigOrDie(cfg)
}
