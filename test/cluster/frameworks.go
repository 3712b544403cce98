package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// Framework names a workload framework whose real controller the harness
// can run beside the control plane, out of cluster, as its own process:
// LeaderWorkerSet, KubeRay or Kubeflow Trainer. hack/build-tools.sh
// frameworks builds the three from the Go module proxy into BinDir, with
// each one's CRDs, ClusterRole and webhooks as its release ships them.
type Framework string

const (
	// LeaderWorkerSet is sigs.k8s.io/lws: a group of a leader and workers
	// per replica, each group a StatefulSet of workers under its leader pod.
	LeaderWorkerSet Framework = "lws"
	// KubeRay is github.com/ray-project/kuberay/ray-operator: RayCluster,
	// RayJob and RayService. Its webhooks are off, as its release ships it.
	KubeRay Framework = "kuberay"
	// Trainer is github.com/kubeflow/trainer/v2: TrainJob and the training
	// runtimes, which it runs as JobSets, so it needs Options.JobSet.
	Trainer Framework = "trainer"
)

// Frameworks are every Framework, in the order hack/localcluster starts
// them.
var Frameworks = []Framework{LeaderWorkerSet, KubeRay, Trainer}

// The APIs the frameworks serve through their CRDs.
var (
	LeaderWorkerSetResource = schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}
	RayClusterResource      = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayclusters"}
	RayJobResource          = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayjobs"}
	TrainJobResource        = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs"}
	TrainingRuntimeResource = schema.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainingruntimes"}
)

// frameworkSpec is how the harness runs one framework's controller: the
// names its upstream manifests give it (namespace, service account,
// ClusterRole, webhook configurations) and the flags it takes.
type frameworkSpec struct {
	namespace      string
	serviceAccount string
	roleName       string
	// webhookPrefix is the name prefix of its webhook configurations, when
	// it ships webhooks the harness registers (a <name>-webhooks.yaml),
	// pointed at the controller's loopback port and trusting the cluster CA.
	webhookPrefix string
	// webhookName, instead, names its one webhook configuration, whose
	// caBundle the controller's own certificate rotation fills; its
	// webhooks keep their Service reference, to webhookService in the
	// framework's namespace. The harness makes that Service an ExternalName
	// for localhost, as it does Muster's (exposeMusterService), so that
	// kube-apiserver dials the controller's port and verifies the
	// certificate the rotation issued for the Service's DNS name.
	webhookName, webhookService string
	// podSelectorKey limits its pod webhooks to pods with this label, as
	// its release's kustomize patch does.
	podSelectorKey string
	// certSecret is the empty Secret its release creates in its namespace
	// for the controller's certificate rotation to fill, and mounts into
	// its pod at certMountDir. The harness stands in for the kubelet: it
	// creates the Secret, and once the controller has filled it writes
	// tls.crt and tls.key into a directory of the cluster's own, which the
	// controller's webhook server reads (through TMPDIR), and into
	// certMountDir, where the rotation looks for them.
	certSecret, certMountDir string
	// args are the controller's flags: kubeconfig, the directory its webhook
	// server reads tls.crt and tls.key from, and its two ports (webhooks,
	// health probes). It may write a config file into workDir.
	args func(kubeconfig, certDir, workDir string, webhookPort, healthPort int) ([]string, error)
}

var frameworkSpecs = map[Framework]frameworkSpec{
	LeaderWorkerSet: {
		namespace:      "lws-system",
		serviceAccount: "lws-controller-manager",
		roleName:       "lws-manager-role",
		webhookPrefix:  "lws-",
		podSelectorKey: "leaderworkerset.sigs.k8s.io/name",
		args: func(kubeconfig, certDir, workDir string, webhookPort, healthPort int) ([]string, error) {
			path := filepath.Join(workDir, "lws.yaml")
			if err := writeManagerConfig(path, "config.lws.x-k8s.io/v1alpha1", webhookPort, certDir, healthPort); err != nil {
				return nil, err
			}
			return []string{"--kubeconfig=" + kubeconfig, "--config=" + path}, nil
		},
	},
	KubeRay: {
		namespace:      "ray-system",
		serviceAccount: "kuberay-operator",
		roleName:       "kuberay-operator",
		args: func(kubeconfig, _, _ string, _, healthPort int) ([]string, error) {
			return []string{
				"--kubeconfig=" + kubeconfig,
				"--enable-leader-election=false",
				"--metrics-addr=0",
				fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", healthPort),
				"--log-stdout-encoder=console",
			}, nil
		},
	},
	Trainer: {
		namespace:      "kubeflow-system",
		serviceAccount: "kubeflow-trainer-controller-manager",
		roleName:       "kubeflow-trainer-controller-manager",
		// Its certificate rotation (cert-controller) fills the Secret its
		// release's kustomization generates, and fails without it; it is
		// ready only once the certificates are mounted at a fixed path and
		// it has written its CA into the webhook configuration of this
		// name. Its webhook server listens on every interface (Trainer
		// v2.0.0 has no flag for the address).
		certSecret:     "kubeflow-trainer-webhook-cert",
		certMountDir:   "/tmp/k8s-webhook-server/serving-certs",
		webhookName:    "validator.trainer.kubeflow.org",
		webhookService: "kubeflow-trainer-controller-manager",
		args: func(kubeconfig, _, _ string, webhookPort, healthPort int) ([]string, error) {
			return []string{
				"--kubeconfig=" + kubeconfig,
				"--leader-elect=false",
				"--metrics-bind-address=0",
				fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", healthPort),
				fmt.Sprintf("--webhook-server-port=%d", webhookPort),
			}, nil
		},
	},
}

// The files hack/build-tools.sh frameworks writes beside each binary.
func (f Framework) crdsFile() string     { return string(f) + "-crds.yaml" }
func (f Framework) rbacFile() string     { return string(f) + "-rbac.yaml" }
func (f Framework) webhooksFile() string { return string(f) + "-webhooks.yaml" }

// files lists the binary and manifests f needs in BinDir.
func (f Framework) files() []string {
	files := []string{string(f), f.crdsFile(), f.rbacFile()}
	if spec := frameworkSpecs[f]; spec.webhookPrefix != "" || spec.webhookName != "" {
		files = append(files, f.webhooksFile())
	}
	return files
}

// missingFrameworkFiles lists the files of Options.Frameworks that are not
// in BinDir.
func (o Options) missingFrameworkFiles() []string {
	var missing []string
	for _, f := range o.Frameworks {
		for _, name := range f.files() {
			if info, err := os.Stat(o.binary(name)); err != nil || info.IsDir() {
				missing = append(missing, o.binary(name))
			}
		}
	}
	return missing
}

// StartFramework runs framework f's controller in the cluster, once: a
// second call, or one for a framework Options.Frameworks started, returns
// at once. It installs f's CRDs, binds its service account to its release's
// ClusterRole, starts the controller as that account and registers its
// webhooks, trusted through the cluster CA; it returns once the controller
// is ready. The controller stops with the cluster. Tests that share a
// cluster start only the frameworks they use.
func (c *Cluster) StartFramework(ctx context.Context, f Framework) error {
	c.frameworksMu.Lock()
	defer c.frameworksMu.Unlock()
	if c.frameworks[f] {
		return nil
	}
	spec, ok := frameworkSpecs[f]
	if !ok {
		return fmt.Errorf("unknown framework %q", f)
	}
	if f == Trainer && !c.opts.JobSet {
		return errors.New("Kubeflow Trainer runs its TrainJobs as JobSets: start the cluster with Options.JobSet")
	}
	for _, name := range f.files() {
		if _, err := os.Stat(c.opts.binary(name)); err != nil {
			return fmt.Errorf("framework %s: %w (run hack/build-tools.sh frameworks)", f, err)
		}
	}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("creating dynamic client: %w", err)
	}
	escape := c.KubeVersion != nil && c.KubeVersion.LessThan(version.MajorMinor(1, 31))
	if err := installCRDs(ctx, dyn, c.opts.binary(f.crdsFile()), escape, c.opts.StartTimeout); err != nil {
		return err
	}
	if err := c.grantController(ctx, c.opts.binary(f.rbacFile()), spec.namespace, spec.serviceAccount, spec.roleName); err != nil {
		return fmt.Errorf("framework %s: %w", f, err)
	}
	var env []string
	if spec.certSecret != "" {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: spec.certSecret, Namespace: spec.namespace}}
		if _, err := c.Client.CoreV1().Secrets(spec.namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("framework %s: creating Secret %s: %w", f, spec.certSecret, err)
		}
		env = []string{"TMPDIR=" + filepath.Join(c.WorkDir, string(f)+"-tmp")}
	}
	kubeconfig, err := c.serviceAccountKubeconfig(string(f), spec.namespace, spec.serviceAccount)
	if err != nil {
		return err
	}
	certDir, err := c.localServingCertDir(string(f))
	if err != nil {
		return err
	}
	// ports[0] serves the webhooks (TLS), ports[1] the health probes.
	start := func(ports []int) (*process, error) {
		args, err := spec.args(kubeconfig, certDir, c.opts.WorkDir, ports[0], ports[1])
		if err != nil {
			return nil, err
		}
		if spec.certMountDir != "" {
			// The rotation takes any certificate there as its own mounted
			// (it only checks that tls.crt exists): one left by an earlier
			// run would have the webhook server start before mountCertSecret
			// wrote the one it reads.
			if err := os.RemoveAll(spec.certMountDir); err != nil {
				return nil, fmt.Errorf("clearing %s: %w", spec.certMountDir, err)
			}
		}
		return startProcessEnv(string(f), c.opts.binary(string(f)), args, env, c.logDir())
	}
	ready := func(ctx context.Context, p *process, ports []int) error {
		if spec.certSecret != "" {
			dirs := []string{filepath.Join(c.WorkDir, string(f)+"-tmp", "k8s-webhook-server", "serving-certs"), spec.certMountDir}
			if err := c.mountCertSecret(ctx, p, spec.namespace, spec.certSecret, dirs); err != nil {
				return err
			}
		}
		url := fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1])
		return p.waitReady(ctx, c.opts.StartTimeout, func(ctx context.Context) error { return httpOK(ctx, url) })
	}
	if spec.certMountDir != "" {
		start, ready = holdMountDir(spec.certMountDir, start, ready)
	}
	hooks := webhookTarget{prefix: spec.webhookPrefix, name: spec.webhookName, podSelectorKey: spec.podSelectorKey}
	if spec.webhookService != "" {
		// The controller fills the caBundle of its webhook configuration
		// and is ready only once it has, so the configuration and its
		// Service come first, on the port this start uses (a start retried
		// on other ports registers them again).
		start = func(start func([]int) (*process, error)) func([]int) (*process, error) {
			return func(ports []int) (*process, error) {
				if err := c.localhostService(ctx, spec.namespace, spec.webhookService, ports[0]); err != nil {
					return nil, err
				}
				hooks.service = &admissionregistrationv1.ServiceReference{Namespace: spec.namespace, Name: spec.webhookService, Port: ptr.To(int32(ports[0]))}
				if err := c.registerReleaseWebhooks(ctx, c.opts.binary(f.webhooksFile()), hooks); err != nil {
					return nil, err
				}
				return start(ports)
			}
		}(start)
	}
	p, ports, err := launch(ctx, 2, start, ready)
	if err != nil {
		return fmt.Errorf("starting %s: %w", f, err)
	}
	c.register(string(f), p, ports, start, ready)
	if spec.webhookPrefix != "" {
		hooks.baseURL = fmt.Sprintf("https://127.0.0.1:%d", ports[0])
		if err := c.registerReleaseWebhooks(ctx, c.opts.binary(f.webhooksFile()), hooks); err != nil {
			return fmt.Errorf("framework %s: %w", f, err)
		}
	}
	if c.frameworks == nil {
		c.frameworks = map[Framework]bool{}
	}
	c.frameworks[f] = true
	return nil
}

// grantController creates a controller's namespace and service account,
// and gives that account the rules its release ships in rbacPath: each
// ClusterRole there (under roleName, the name the release's kustomization
// gives the first) bound cluster-wide, each Role bound in namespace.
func (c *Cluster) grantController(ctx context.Context, rbacPath, namespace, serviceAccount, roleName string) error {
	data, err := os.ReadFile(rbacPath)
	if err != nil {
		return fmt.Errorf("reading RBAC: %w", err)
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: serviceAccount, Namespace: namespace}}
	core, rbac := c.Client.CoreV1(), c.Client.RbacV1()
	// created reports a create's error, an object that exists already
	// being no error (a second start, or a restarted harness).
	created := func(what string) func(any, error) error {
		return func(_ any, err error) error {
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating %s: %w", what, err)
			}
			return nil
		}
	}
	if err := created("namespace " + namespace)(core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})); err != nil {
		return err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: serviceAccount, Namespace: namespace}}
	if err := created("service account")(core.ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{})); err != nil {
		return err
	}
	clusterRoles := 0
	err = eachDocument(rbacPath, data, func(kind string, raw []byte) error {
		switch kind {
		case "ClusterRole":
			role := &rbacv1.ClusterRole{}
			if err := yaml.UnmarshalStrict(raw, role); err != nil {
				return fmt.Errorf("decoding a ClusterRole of %s: %w", rbacPath, err)
			}
			name := roleName
			if clusterRoles > 0 {
				name = roleName + "-" + role.Name
			}
			clusterRoles++
			role.ObjectMeta = metav1.ObjectMeta{Name: name}
			binding := &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: name + "binding"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
				Subjects:   subject,
			}
			if err := created("cluster role " + name)(rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{})); err != nil {
				return err
			}
			if err := created("cluster role binding " + name)(rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})); err != nil {
				return err
			}
		case "Role":
			role := &rbacv1.Role{}
			if err := yaml.UnmarshalStrict(raw, role); err != nil {
				return fmt.Errorf("decoding a Role of %s: %w", rbacPath, err)
			}
			name := roleName + "-" + role.Name
			role.ObjectMeta = metav1.ObjectMeta{Name: name, Namespace: namespace}
			binding := &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: name + "binding", Namespace: namespace},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
				Subjects:   subject,
			}
			if err := created("role " + name)(rbac.Roles(namespace).Create(ctx, role, metav1.CreateOptions{})); err != nil {
				return err
			}
			if err := created("role binding " + name)(rbac.RoleBindings(namespace).Create(ctx, binding, metav1.CreateOptions{})); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s holds a %s, want ClusterRoles and Roles", rbacPath, kind)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if clusterRoles == 0 {
		return fmt.Errorf("%s holds no ClusterRole", rbacPath)
	}
	return nil
}

// mountCertSecret waits until a controller's certificate rotation has
// filled Secret name with tls.crt and tls.key, and writes both into each
// of dirs, as the kubelet would mount the Secret into its pod.
func (c *Cluster) mountCertSecret(ctx context.Context, p *process, namespace, name string, dirs []string) error {
	var data map[string][]byte
	err := p.waitReady(ctx, c.opts.StartTimeout, func(ctx context.Context) error {
		secret, err := c.Client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(secret.Data["tls.crt"]) == 0 || len(secret.Data["tls.key"]) == 0 {
			return fmt.Errorf("Secret %s/%s holds no certificate yet", namespace, name)
		}
		data = secret.Data
		return nil
	})
	if err != nil {
		return err
	}
	for _, dir := range dirs {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", dir, err)
		}
		for _, key := range []string{"tls.crt", "tls.key"} {
			tmp := filepath.Join(dir, "."+key+".tmp")
			if err := os.WriteFile(tmp, data[key], 0o600); err != nil {
				return err
			}
			if err := os.Rename(tmp, filepath.Join(dir, key)); err != nil {
				return err
			}
		}
	}
	return nil
}

// localServingCertDir writes the harness's serving certificate for
// 127.0.0.1 (which the cluster CA signed) as tls.crt and tls.key into a
// directory of name's, for a controller's webhook server.
func (c *Cluster) localServingCertDir(name string) (string, error) {
	certDir := filepath.Join(c.WorkDir, name+"-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return "", fmt.Errorf("creating %s cert dir: %w", name, err)
	}
	for src, dst := range map[string]string{c.pki.LocalServingCert: "tls.crt", c.pki.LocalServKey: "tls.key"} {
		data, err := os.ReadFile(src)
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", src, err)
		}
		if err := os.WriteFile(filepath.Join(certDir, dst), data, 0o600); err != nil {
			return "", fmt.Errorf("writing %s %s: %w", name, dst, err)
		}
	}
	return certDir, nil
}

// webhookTarget is how registerReleaseWebhooks registers a release's
// webhooks.
type webhookTarget struct {
	// prefix is prepended to each configuration's name; name, if set,
	// replaces it instead.
	prefix, name string
	// baseURL, if set, is where the webhooks are called (plus each one's
	// service path), trusting the cluster CA. Else service replaces each
	// Service reference, and the caBundle is left to the controller.
	baseURL string
	service *admissionregistrationv1.ServiceReference
	// podSelectorKey limits pod webhooks to pods with this label.
	podSelectorKey string
}

// registerReleaseWebhooks registers the webhook configurations of a
// release's manifest (controller-gen's config/webhook/manifests.yaml) as its
// kustomization would: each configuration named as the target says, each
// webhook called where it says, and pod webhooks limited to the pods the
// release's own patch selects.
func (c *Cluster) registerReleaseWebhooks(ctx context.Context, path string, target webhookTarget) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading webhooks: %w", err)
	}
	caBundle, err := os.ReadFile(c.pki.CACert)
	if err != nil {
		return fmt.Errorf("reading CA bundle: %w", err)
	}
	var podSelector *metav1.LabelSelector
	if target.podSelectorKey != "" {
		podSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: target.podSelectorKey, Operator: metav1.LabelSelectorOpExists}}}
	}
	name := func(m metav1.ObjectMeta) metav1.ObjectMeta {
		if target.name != "" {
			return metav1.ObjectMeta{Name: target.name}
		}
		return metav1.ObjectMeta{Name: target.prefix + m.Name}
	}
	// point rewrites one webhook's client config and object selector.
	point := func(cc *admissionregistrationv1.WebhookClientConfig, rules []admissionregistrationv1.RuleWithOperations, selector **metav1.LabelSelector) error {
		if cc.Service == nil || cc.Service.Path == nil {
			return fmt.Errorf("a webhook of %s has no service path", path)
		}
		if target.baseURL != "" {
			url := target.baseURL + *cc.Service.Path
			*cc = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle}
		} else {
			svc := *target.service
			svc.Path = cc.Service.Path
			*cc = admissionregistrationv1.WebhookClientConfig{Service: &svc}
		}
		if forPods(rules) && *selector == nil {
			*selector = podSelector
		}
		return nil
	}
	admission := c.Client.AdmissionregistrationV1()
	return eachDocument(path, data, func(kind string, raw []byte) error {
		switch kind {
		case "MutatingWebhookConfiguration":
			cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := yaml.UnmarshalStrict(raw, cfg); err != nil {
				return fmt.Errorf("decoding %s: %w", path, err)
			}
			cfg.ObjectMeta = name(cfg.ObjectMeta)
			for i := range cfg.Webhooks {
				w := &cfg.Webhooks[i]
				if err := point(&w.ClientConfig, w.Rules, &w.ObjectSelector); err != nil {
					return err
				}
			}
			if err := replace(ctx, admission.MutatingWebhookConfigurations(), cfg); err != nil {
				return fmt.Errorf("registering %s: %w", cfg.Name, err)
			}
		case "ValidatingWebhookConfiguration":
			cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			if err := yaml.UnmarshalStrict(raw, cfg); err != nil {
				return fmt.Errorf("decoding %s: %w", path, err)
			}
			cfg.ObjectMeta = name(cfg.ObjectMeta)
			for i := range cfg.Webhooks {
				w := &cfg.Webhooks[i]
				if err := point(&w.ClientConfig, w.Rules, &w.ObjectSelector); err != nil {
					return err
				}
			}
			if err := replace(ctx, admission.ValidatingWebhookConfigurations(), cfg); err != nil {
				return fmt.Errorf("registering %s: %w", cfg.Name, err)
			}
		default:
			return fmt.Errorf("%s holds a %s, want webhook configurations", path, kind)
		}
		return nil
	})
}

// eachDocument calls fn with the kind and the YAML of each non-empty
// document of a multi-document YAML file's data, read from path.
func eachDocument(path string, data []byte, fn func(kind string, raw []byte) error) error {
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var doc map[string]any
		if err := decoder.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("decoding %s: %w", path, err)
		}
		if len(doc) == 0 {
			continue
		}
		raw, err := yaml.Marshal(doc)
		if err != nil {
			return err
		}
		kind, _ := doc["kind"].(string)
		if err := fn(kind, raw); err != nil {
			return err
		}
	}
}

// replace creates obj, deleting first an object of its name that a
// previous start registered.
func replace[T metav1.Object](ctx context.Context, client interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
}, obj T) error {
	if err := client.Delete(ctx, obj.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	_, err := client.Create(ctx, obj, metav1.CreateOptions{})
	return err
}

// forPods reports whether rules match pods.
func forPods(rules []admissionregistrationv1.RuleWithOperations) bool {
	for _, r := range rules {
		for _, res := range r.Resources {
			if res == "pods" || strings.HasPrefix(res, "pods/") {
				return true
			}
		}
	}
	return false
}

// localhostService creates Service name in namespace as an ExternalName
// for localhost on port, as exposeMusterService does with Muster's: the
// harness's processes listen on loopback, which EndpointSlices refuse.
func (c *Cluster) localhostService(ctx context.Context, namespace, name string, port int) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.ServiceSpec{
			Type:         corev1.ServiceTypeExternalName,
			ExternalName: "localhost",
			Ports:        []corev1.ServicePort{{Name: "webhook", Port: int32(port), Protocol: corev1.ProtocolTCP}},
		},
	}
	if err := replace(ctx, c.Client.CoreV1().Services(namespace), svc); err != nil {
		return fmt.Errorf("creating Service %s/%s: %w", namespace, name, err)
	}
	return nil
}

// holdMountDir wraps a controller's start and ready so that each start, up
// to its readiness, holds an exclusive lock on mountDir, a path fixed by the
// release and so shared by every cluster on the machine: two clusters that
// start the controller at once (make test runs the releases' shards side by
// side) take turns at clearing the directory and at the rotation's check of
// what is mounted there, instead of each reading the other's certificate.
func holdMountDir(mountDir string, start func([]int) (*process, error), ready func(context.Context, *process, []int) error) (func([]int) (*process, error), func(context.Context, *process, []int) error) {
	var lock *os.File
	unlock := func() {
		if lock != nil {
			_ = lock.Close() // closing the file releases its lock
			lock = nil
		}
	}
	lockedStart := func(ports []int) (*process, error) {
		if err := os.MkdirAll(filepath.Dir(mountDir), 0o755); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(mountDir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
		}
		lock = f
		p, err := start(ports)
		if err != nil {
			unlock()
		}
		return p, err
	}
	lockedReady := func(ctx context.Context, p *process, ports []int) error {
		defer unlock()
		return ready(ctx, p, ports)
	}
	return lockedStart, lockedReady
}
