package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/test/ocirun"
)

// serviceAccountMountPath is where the kubelet mounts a pod's service
// account token, and where rest.InClusterConfig reads it.
const serviceAccountMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// ImageReplica is one extra replica of the chart's muster-apiserver or
// muster-webhook Deployment run from the image under an OCI runtime, as a
// kubelet would run the pod.
type ImageReplica struct {
	// URL and WebhookURL are its API's and its webhook's listeners, each
	// empty when it serves none.
	URL, WebhookURL string
	// ID is the container's id in the runtime.
	ID string

	runtime  string
	root     string
	proc     *process
	stopOnce sync.Once
	stopErr  error
}

// StartMusterImage runs the host platform's image from the OCI layout at
// layoutDir under ociRuntime (a name on PATH, or a path) as one more
// replica of the chart's Deployment, and waits until both its listeners
// are ready. The container gets what the kubelet would give the pod:
//
//   - the chart container's args and env, exactly, but for the ports and
//     the bind address: every replica shares the host's network namespace
//     and listens on loopback, as the harness's processes do;
//   - the chart's Secrets and ConfigMaps (and emptyDirs) at the chart's
//     own mount paths, owned by the pod's fsGroup, read-only;
//   - its service account's token, the cluster CA and the namespace in
//     /var/run/secrets/kubernetes.io/serviceaccount, and
//     KUBERNETES_SERVICE_HOST and _PORT naming kube-apiserver (whose
//     serving certificate carries 127.0.0.1), so the server builds its
//     in-cluster config as in a real pod: no kubeconfig flag at all;
//   - the image's own entrypoint and user (which must be the user the
//     chart's securityContext asks for), the read-only root filesystem and
//     the capabilities the chart's securityContext sets.
//
// The caller stops it with Stop; the cluster does not.
func (c *Cluster) StartMusterImage(ctx context.Context, layoutDir, ociRuntime string) (*ImageReplica, error) {
	ports, err := freePorts(musterPorts)
	if err != nil {
		return nil, err
	}
	r, err := c.startImage(ctx, layoutDir, ociRuntime, MusterDeployment, func(noWebhook bool) []string {
		webhook := strconv.Itoa(ports[1])
		if noWebhook {
			webhook = "0"
		}
		return []string{"--secure-port=" + strconv.Itoa(ports[0]), "--webhook-port=" + webhook}
	})
	if err != nil {
		return nil, err
	}
	if err := c.musterReady(ctx, r.proc, ports); err != nil {
		return nil, errors.Join(fmt.Errorf("starting Muster's image: %w", err), r.Stop())
	}
	r.URL, r.WebhookURL = c.recordMusterURLs(ports)
	if !c.currentMusterPod().servesWebhook() {
		r.WebhookURL = "" // the chart's muster-webhook serves it
	}
	return r, nil
}

// StartWebhookImage runs the image as one more replica of the chart's
// muster-webhook Deployment, as StartMusterImage does muster-apiserver's:
// its args and env but for the port and bind address, its Secrets at its
// mount paths, no service account token (the pod mounts none), and waits
// until its webhook listener is ready.
func (c *Cluster) StartWebhookImage(ctx context.Context, layoutDir, ociRuntime string) (*ImageReplica, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	r, err := c.startImage(ctx, layoutDir, ociRuntime, WebhookDeployment, func(bool) []string {
		return []string{"--webhook-port=" + strconv.Itoa(ports[0])}
	})
	if err != nil {
		return nil, err
	}
	if err := c.webhookReady(ctx, r.proc, ports[0]); err != nil {
		return nil, errors.Join(fmt.Errorf("starting Muster's image as the webhook: %w", err), r.Stop())
	}
	r.WebhookURL = fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	return r, nil
}

// startImage runs the image as a pod of the chart's Deployment deployment,
// with portArgs (given whether the template serves no webhook) in place
// of the template's port flags.
func (c *Cluster) startImage(ctx context.Context, layoutDir, ociRuntime, deployment string, portArgs func(noWebhook bool) []string) (*ImageReplica, error) {
	runtimePath, err := exec.LookPath(ociRuntime)
	if err != nil {
		return nil, fmt.Errorf("%s not found (hack/install-oci-runtime.sh installs it): %w", ociRuntime, err)
	}
	img, err := ocirun.HostImage(layoutDir)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the image's config: %w", err)
	}
	d, err := c.Client.AppsV1().Deployments(MusterNamespace).Get(ctx, deployment, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the chart's Deployment %s: %w", deployment, err)
	}
	root, err := os.MkdirTemp(c.WorkDir, deployment+"-image-")
	if err != nil {
		return nil, fmt.Errorf("creating the container's directory: %w", err)
	}
	r := &ImageReplica{ID: deployment + "-image-" + strconv.FormatInt(time.Now().UnixNano(), 36), runtime: runtimePath, root: root}
	cfg, err := c.containerConfig(ctx, d.Spec.Template.Spec, cf.Config.User, root, portArgs)
	if err != nil {
		return nil, errors.Join(err, r.Stop())
	}
	bundle := filepath.Join(root, "bundle")
	if err := ocirun.WriteBundle(runtimePath, bundle, img, cfg); err != nil {
		return nil, errors.Join(err, r.Stop())
	}
	klog.FromContext(ctx).Info("Running Muster's image", "runtime", runtimePath, "container", r.ID, "bundle", bundle, "args", cfg.Args)
	if r.proc, err = startProcess(r.ID, runtimePath, ocirun.RunArgs(bundle, r.ID), c.logDir()); err != nil {
		return nil, errors.Join(err, r.Stop())
	}
	return r, nil
}

// containerConfig turns the chart's pod spec into the container's
// config, with its volumes and token written under root.
func (c *Cluster) containerConfig(ctx context.Context, spec corev1.PodSpec, imageUser, root string, portArgs func(noWebhook bool) []string) (ocirun.Config, error) {
	if len(spec.Containers) != 1 {
		return ocirun.Config{}, fmt.Errorf("the pod has %d containers, the harness runs one", len(spec.Containers))
	}
	container := spec.Containers[0]
	uid, gid, err := ocirun.ParseUser(imageUser)
	if err != nil {
		return ocirun.Config{}, err
	}
	if err := checkRunAs(spec.SecurityContext, container.SecurityContext, uid, gid); err != nil {
		return ocirun.Config{}, err
	}
	var fsGroup *uint32
	if sc := spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		g := uint32(*sc.FSGroup)
		fsGroup = &g
	}
	cfg := ocirun.Config{}
	if fsGroup != nil {
		cfg.SupplementalGroups = []uint32{*fsGroup}
	}
	if sc := container.SecurityContext; sc != nil {
		cfg.ReadOnlyRoot = sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
		if sc.Capabilities != nil {
			for _, drop := range sc.Capabilities.Drop {
				cfg.NoCapabilities = cfg.NoCapabilities || drop == "ALL"
			}
		}
	}
	local, err := c.materialiseMounts(ctx, filepath.Join(root, "pod"), spec.Volumes, container.VolumeMounts)
	if err != nil {
		return ocirun.Config{}, err
	}
	if cfg.Mounts, err = projectVolumes(spec.Volumes, container.VolumeMounts, local, fsGroup); err != nil {
		return ocirun.Config{}, err
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		dir := filepath.Join(root, "serviceaccount")
		if err := c.writeServiceAccountToken(ctx, dir, spec.ServiceAccountName); err != nil {
			return ocirun.Config{}, err
		}
		if err := ownFiles(dir, nil, 0o644, fsGroup); err != nil {
			return ocirun.Config{}, err
		}
		cfg.Mounts = append(cfg.Mounts, ocirun.Mount{Source: dir, Destination: serviceAccountMountPath, ReadOnly: true})
	}
	noWebhook := false
	for _, arg := range container.Args {
		if !isPortFlag(arg) {
			cfg.Args = append(cfg.Args, arg)
		}
		noWebhook = noWebhook || arg == "--webhook-port=0"
	}
	cfg.Args = append(cfg.Args, portArgs(noWebhook)...)
	// A pod binds every address of its own network namespace; this
	// container shares the host's, and the harness listens on loopback
	// only.
	cfg.Args = append(cfg.Args, "--bind-address=127.0.0.1")
	if cfg.Env, err = resolveEnv(container); err != nil {
		return ocirun.Config{}, err
	}
	u, err := url.Parse(c.APIServerURL)
	if err != nil {
		return ocirun.Config{}, fmt.Errorf("parsing %s: %w", c.APIServerURL, err)
	}
	// The kubelet sets these for every pod (enableServiceLinks: false
	// leaves them): the kubernetes Service, here kube-apiserver itself.
	cfg.Env = append(cfg.Env, "KUBERNETES_SERVICE_HOST="+u.Hostname(), "KUBERNETES_SERVICE_PORT="+u.Port())
	return cfg, nil
}

// checkRunAs fails unless the user and group the pod's and container's
// securityContext ask for, where they ask, are the image's own: the
// container runs as the image's user, and this proves the chart agrees.
func checkRunAs(pod *corev1.PodSecurityContext, container *corev1.SecurityContext, uid, gid uint32) error {
	var user, group *int64
	if pod != nil {
		user, group = pod.RunAsUser, pod.RunAsGroup
	}
	if container != nil {
		if container.RunAsUser != nil {
			user = container.RunAsUser
		}
		if container.RunAsGroup != nil {
			group = container.RunAsGroup
		}
	}
	if user != nil && *user != int64(uid) {
		return fmt.Errorf("the chart runs as user %d, the image as %d", *user, uid)
	}
	if group != nil && *group != int64(gid) {
		return fmt.Errorf("the chart runs as group %d, the image as %d", *group, gid)
	}
	return nil
}

// Pid is the host's process id of the container's muster-apiserver.
func (r *ImageReplica) Pid() (int, error) { return ocirun.Pid(r.runtime, r.ID) }

// Running reports whether the container's process is still alive.
func (r *ImageReplica) Running() bool { return r.proc != nil && !r.proc.exited() }

// Log is what the container has written so far.
func (r *ImageReplica) Log() string {
	if r.proc == nil {
		return ""
	}
	data, _ := r.proc.log()
	return string(data)
}

// Stop kills and deletes the container and removes its bundle and
// volumes. It is safe to call more than once.
func (r *ImageReplica) Stop() error {
	r.stopOnce.Do(func() {
		r.stopErr = ocirun.Remove(r.runtime, r.ID)
		if r.proc != nil {
			r.proc.stop()
		}
		if err := os.RemoveAll(r.root); err != nil {
			r.stopErr = errors.Join(r.stopErr, err)
		}
	})
	return r.stopErr
}
