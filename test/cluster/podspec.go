package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// MusterDeployment is the chart's Deployment of muster-apiserver.
const MusterDeployment = "muster-apiserver"

// podProcess is how the harness runs a container of the chart's pod
// template as a process, as a kubelet would run it: its args with the
// mount paths moved under the work dir, its env, and the service account
// token it would find mounted.
type podProcess struct {
	// args are the container's, mount paths rewritten, without the ports.
	args []string
	// env is the container's resolved env, NAME=value.
	env []string
	// inCluster are the flags that stand in for the in-cluster config the
	// pod would read from its mounted token and the kubernetes Service.
	inCluster []string
	// generation is the Deployment's, to tell a new template from an old.
	generation int64
	// preStop is the container's preStop sleep: how long an old process
	// keeps serving once a rolling update has replaced its endpoint.
	preStop time.Duration
	// noWebhook says that the template serves no webhook
	// (--webhook-port=0): the chart's muster-webhook Deployment does.
	noWebhook bool
	// volumes and mounts are the template's, and root where they are
	// written, so that a Secret's change can be written again, as the
	// kubelet updates a Secret volume (refreshMounts).
	volumes []corev1.Volume
	mounts  []corev1.VolumeMount
	root    string
}

// portFlags are the flags of the listening ports, which the harness sets
// per process: each process is a pod with an address of its own on a
// real cluster, and shares loopback here.
var portFlags = []string{"--secure-port", "--webhook-port"}

// readMusterPod reads the chart's Deployment and turns its pod template
// into a podProcess: it writes the Secrets and ConfigMaps it mounts under
// <work dir>/muster-pod/<generation>/, and requests a token for its
// service account.
func (c *Cluster) readMusterPod(ctx context.Context) (*podProcess, error) {
	d, err := c.Client.AppsV1().Deployments(MusterNamespace).Get(ctx, MusterDeployment, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the chart's Deployment: %w", err)
	}
	root := filepath.Join(c.WorkDir, "muster-pod", strconv.FormatInt(d.Generation, 10))
	pp, kubeconfig, err := c.podProcessFor(ctx, d.Spec.Template.Spec, root)
	if err != nil {
		return nil, err
	}
	pp.generation = d.Generation
	pp.inCluster = []string{
		// A pod binds every address of its own network namespace; the
		// processes share the host's, and the harness's servers listen on
		// loopback.
		"--bind-address=127.0.0.1",
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
	}
	return pp, nil
}

// podProcessFor turns a pod spec of one container into a podProcess whose
// files live under root, and returns the kubeconfig of its service
// account's token.
func (c *Cluster) podProcessFor(ctx context.Context, spec corev1.PodSpec, root string) (*podProcess, string, error) {
	if len(spec.Containers) != 1 {
		return nil, "", fmt.Errorf("the pod has %d containers, the harness runs one", len(spec.Containers))
	}
	container := spec.Containers[0]
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, "", fmt.Errorf("creating %s: %w", root, err)
	}
	mounts, err := c.materialiseMounts(ctx, root, spec.Volumes, container.VolumeMounts)
	if err != nil {
		return nil, "", err
	}
	pp := &podProcess{volumes: spec.Volumes, mounts: container.VolumeMounts, root: root}
	if l := container.Lifecycle; l != nil && l.PreStop != nil && l.PreStop.Sleep != nil {
		pp.preStop = time.Duration(l.PreStop.Sleep.Seconds) * time.Second
	}
	for _, arg := range container.Args {
		if isPortFlag(arg) {
			pp.noWebhook = pp.noWebhook || arg == "--webhook-port=0"
			continue
		}
		pp.args = append(pp.args, rewriteMountPath(arg, mounts))
	}
	if pp.env, err = resolveEnv(container); err != nil {
		return nil, "", err
	}
	if a := spec.AutomountServiceAccountToken; a != nil && !*a {
		return pp, "", nil // no token mounted: it calls no API
	}
	kubeconfig, err := c.podTokenKubeconfig(ctx, root, spec.ServiceAccountName)
	if err != nil {
		return nil, "", err
	}
	return pp, kubeconfig, nil
}

// rewriteMountPath moves a flag's value that is a path under a mount
// (the longest that matches) to the mount's local directory.
func rewriteMountPath(arg string, mounts map[string]string) string {
	name, value, ok := strings.Cut(arg, "=")
	if !ok {
		return arg
	}
	best := ""
	for mountPath := range mounts {
		if (value == mountPath || strings.HasPrefix(value, strings.TrimSuffix(mountPath, "/")+"/")) && len(mountPath) > len(best) {
			best = mountPath
		}
	}
	if best == "" {
		return arg
	}
	return name + "=" + mounts[best] + strings.TrimPrefix(value, best)
}

// isPortFlag reports whether arg is one of portFlags.
func isPortFlag(arg string) bool {
	for _, f := range portFlags {
		if strings.HasPrefix(arg, f+"=") {
			return true
		}
	}
	return false
}

// command is the process's arguments on ports (API, webhook). A template
// that serves no webhook keeps --webhook-port=0.
func (pp *podProcess) command(ports []int) []string {
	args := append([]string{}, pp.args...)
	webhook := strconv.Itoa(ports[1])
	if pp.noWebhook {
		webhook = "0"
	}
	args = append(args, "--secure-port="+strconv.Itoa(ports[0]), "--webhook-port="+webhook)
	return append(args, pp.inCluster...)
}

// servesWebhook says whether a process of the template serves the webhook
// (the chart's muster-apiserver does not: muster-webhook does).
func (pp *podProcess) servesWebhook() bool { return pp == nil || !pp.noWebhook }

// materialiseMounts writes each mounted volume under root, as the kubelet
// projects it into the pod, and returns mount path -> local directory.
func (c *Cluster) materialiseMounts(ctx context.Context, root string, volumes []corev1.Volume, mounts []corev1.VolumeMount) (map[string]string, error) {
	byName := map[string]corev1.Volume{}
	for _, v := range volumes {
		byName[v.Name] = v
	}
	local := map[string]string{}
	for _, m := range mounts {
		v, ok := byName[m.Name]
		if !ok {
			return nil, fmt.Errorf("volume mount %s names no volume", m.Name)
		}
		dir := filepath.Join(root, "volumes", v.Name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("creating %s: %w", dir, err)
		}
		var files map[string][]byte
		var items []corev1.KeyToPath
		switch {
		case v.Secret != nil:
			s, err := c.waitSecret(ctx, v.Secret.SecretName)
			if err != nil {
				return nil, err
			}
			files, items = s.Data, v.Secret.Items
		case v.ConfigMap != nil:
			cm, err := c.Client.CoreV1().ConfigMaps(MusterNamespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("reading ConfigMap %s for volume %s: %w", v.ConfigMap.Name, v.Name, err)
			}
			files = map[string][]byte{}
			for k, s := range cm.Data {
				files[k] = []byte(s)
			}
			items = v.ConfigMap.Items
		case v.EmptyDir != nil:
		case v.Projected != nil && isServiceAccountVolume(v.Projected):
			// The token the ServiceAccount admission plugin mounts into a
			// pod (a Job's pod has it; a Deployment's template does not):
			// the process reads the TokenRequest token through its
			// kubeconfig instead (podTokenKubeconfig).
		default:
			return nil, fmt.Errorf("volume %s: the harness materialises Secrets, ConfigMaps and emptyDirs only", v.Name)
		}
		if err := writeVolume(dir, files, items); err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		local[m.MountPath] = dir
	}
	return local, nil
}

// isServiceAccountVolume reports whether a projected volume is the
// service account token's, kube-api-access-*: a token, the cluster CA and
// the namespace.
func isServiceAccountVolume(p *corev1.ProjectedVolumeSource) bool {
	for _, src := range p.Sources {
		if src.ServiceAccountToken != nil {
			return true
		}
	}
	return false
}

// writeVolume writes a Secret's or ConfigMap's keys (or just items) as
// files, readable by their owner alone.
func writeVolume(dir string, files map[string][]byte, items []corev1.KeyToPath) error {
	paths := map[string]string{}
	for k := range files {
		paths[k] = k
	}
	if len(items) > 0 {
		paths = map[string]string{}
		for _, it := range items {
			paths[it.Key] = it.Path
		}
	}
	for key, path := range paths {
		data, ok := files[key]
		if !ok {
			return fmt.Errorf("no key %s", key)
		}
		// Whole files, as the kubelet swaps a volume's contents: a process
		// that reloads them never reads half of one.
		dst := filepath.Join(dir, path)
		if old, err := os.ReadFile(dst); err == nil && bytes.Equal(old, data) {
			continue
		}
		tmp := dst + ".tmp"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, dst); err != nil {
			return err
		}
	}
	return nil
}

// waitSecret waits for a Secret the pod mounts: a kubelet leaves the pod
// in ContainerCreating until it exists.
func (c *Cluster) waitSecret(ctx context.Context, name string) (*corev1.Secret, error) {
	var s *corev1.Secret
	var last error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, c.opts.StartTimeout, true, func(ctx context.Context) (bool, error) {
		s, last = c.Client.CoreV1().Secrets(MusterNamespace).Get(ctx, name, metav1.GetOptions{})
		return last == nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for Secret %s/%s the pod mounts (last: %v): %w", MusterNamespace, name, last, err)
	}
	return s, nil
}

// resolveEnv resolves the container's env as the kubelet would for a pod
// in MusterNamespace: literal values, the pod's namespace, and resource
// limits.
func resolveEnv(container corev1.Container) ([]string, error) {
	var env []string
	for _, e := range container.Env {
		value := e.Value
		if src := e.ValueFrom; src != nil {
			switch {
			case src.FieldRef != nil && src.FieldRef.FieldPath == "metadata.namespace":
				value = MusterNamespace
			case src.ResourceFieldRef != nil:
				q, ok := container.Resources.Limits[corev1.ResourceName(strings.TrimPrefix(src.ResourceFieldRef.Resource, "limits."))]
				if !ok {
					return nil, fmt.Errorf("env %s: the container has no %s", e.Name, src.ResourceFieldRef.Resource)
				}
				divisor := resource.MustParse("1")
				if !src.ResourceFieldRef.Divisor.IsZero() {
					divisor = src.ResourceFieldRef.Divisor
				}
				value = strconv.FormatInt(q.Value()/divisor.Value(), 10)
			default:
				return nil, fmt.Errorf("env %s: the harness resolves literal values, metadata.namespace and resource limits only", e.Name)
			}
		}
		env = append(env, e.Name+"="+value)
	}
	return env, nil
}

// podTokenKubeconfig requests a token for the pod's service account
// (TokenRequest, as the kubelet does for its projected token) and writes
// it with the cluster CA under root/serviceaccount/, as the pod finds them
// mounted, plus a kubeconfig that reads them: the in-cluster config needs
// the kubernetes Service's address, which nothing routes here.
func (c *Cluster) podTokenKubeconfig(ctx context.Context, root, serviceAccount string) (string, error) {
	dir := filepath.Join(root, "serviceaccount")
	if err := c.writeServiceAccountToken(ctx, dir, serviceAccount); err != nil {
		return "", err
	}
	const name = "in-cluster"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: c.APIServerURL, CertificateAuthority: filepath.Join(dir, "ca.crt")}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{TokenFile: filepath.Join(dir, "token")}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: MusterNamespace}
	cfg.CurrentContext = name
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}

// writeServiceAccountToken requests a token for the pod's service account
// (TokenRequest, as the kubelet does for its projected token) and writes
// it into dir with the cluster CA and the namespace: the files a pod finds
// in /var/run/secrets/kubernetes.io/serviceaccount.
func (c *Cluster) writeServiceAccountToken(ctx context.Context, dir, serviceAccount string) error {
	if serviceAccount == "" {
		serviceAccount = "default"
	}
	expiry := int64((48 * time.Hour).Seconds())
	tr, err := c.Client.CoreV1().ServiceAccounts(MusterNamespace).CreateToken(ctx, serviceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("requesting a token for service account %s/%s: %w", MusterNamespace, serviceAccount, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	ca, err := os.ReadFile(c.pki.CACert)
	if err != nil {
		return fmt.Errorf("reading the cluster CA: %w", err)
	}
	files := map[string][]byte{"token": []byte(tr.Status.Token), "ca.crt": ca, "namespace": []byte(MusterNamespace)}
	if err := writeVolume(dir, files, nil); err != nil {
		return fmt.Errorf("writing the service account token: %w", err)
	}
	return nil
}
