package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// ControllerManagerComponent is kube-controller-manager: the namespace
// controller, the garbage collector, the service-account controllers, and
// the Job, ReplicaSet, Deployment, StatefulSet and ResourceClaim controllers
// that create real gangs.
const ControllerManagerComponent = "kube-controller-manager"

// controllerManagerArgs are the flags of a kube-controller-manager that runs
// the upstream default set of controllers (--controllers=*), each with the
// credentials of its own service account, as kubeadm configures it. It
// serves only on loopback and does not elect a leader, so that several
// clusters on one machine never wait on each other.
func (c *Cluster) controllerManagerArgs(port int, kubeconfig string) []string {
	pki := c.pki
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--controllers=*",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + pki.ServiceAccountKey,
		"--root-ca-file=" + pki.CACert,
		"--cluster-signing-cert-file=" + pki.CACert,
		"--cluster-signing-key-file=" + pki.CAKey,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + pki.LocalServingCert,
		"--tls-private-key-file=" + pki.LocalServKey,
	}
}

// startControllerManager runs kube-controller-manager as the
// system:kube-controller-manager user, whose bootstrap RBAC lets it act with
// each controller's own service account, and waits until the service-account
// controller has created the default ServiceAccount of the default
// namespace: pods are admitted only once their namespace has one.
func (c *Cluster) startControllerManager(ctx context.Context) error {
	kubeconfig := filepath.Join(c.opts.WorkDir, "kube-controller-manager.kubeconfig")
	creds := credentials{certFile: c.pki.ControllerManagerCert, keyFile: c.pki.ControllerManagerKey}
	if err := writeKubeconfig(kubeconfig, c.APIServerURL, c.pki.CACert, creds); err != nil {
		return err
	}
	start := func(ports []int) (*process, error) {
		args := append(c.controllerManagerArgs(ports[0], kubeconfig), c.opts.ControllerManagerArgs...)
		return startProcess(ControllerManagerComponent, c.opts.binary(ControllerManagerBinary), args, c.logDir())
	}
	ready := func(ctx context.Context, p *process, ports []int) error {
		url := fmt.Sprintf("https://127.0.0.1:%d/healthz", ports[0])
		return p.waitReady(ctx, c.opts.StartTimeout, func(ctx context.Context) error { return c.httpsOK(ctx, url) })
	}
	p, ports, err := launch(ctx, 1, start, ready)
	if err != nil {
		return fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	c.register(ControllerManagerComponent, p, ports, start, ready)
	return c.WaitForDefaultServiceAccount(ctx, metav1.NamespaceDefault)
}

// WaitForDefaultServiceAccount waits until the service-account controller
// has created the "default" ServiceAccount in namespace. The ServiceAccount
// admission plugin rejects a pod whose service account does not exist yet,
// so on a real cluster a client that creates pods right after their
// namespace waits for it first, as upstream's e2e framework does.
func (c *Cluster) WaitForDefaultServiceAccount(ctx context.Context, namespace string) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, c.opts.StartTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the default service account of namespace %s: %w", namespace, err)
	}
	return nil
}
