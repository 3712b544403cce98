package cluster

import (
	"bytes"
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/klog/v2"
)

// Files of the JobSet controller (sigs.k8s.io/jobset), which
// hack/build-tools.sh builds into Options.BinDir with the CRDs and the
// ClusterRole of the pinned release beside it.
const (
	JobSetBinary   = "jobset"
	JobSetCRDsFile = "jobset-crds.yaml"
	JobSetRBACFile = "jobset-rbac.yaml"
)

// Names the JobSet controller runs under, those of its upstream manifests
// (config/default: namespace jobset-system, prefix jobset-).
const (
	// JobSetComponent is the JobSet controller process, which Restart can
	// restart.
	JobSetComponent      = "jobset"
	JobSetNamespace      = "jobset-system"
	JobSetServiceAccount = "jobset-controller-manager"
	jobSetRoleName       = "jobset-manager-role"
	jobSetWebhookPrefix  = "jobset-"
)

// JobSetResource is the JobSet API the controller serves through its CRD.
var JobSetResource = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// managerConfig is the Configuration file that JobSet and LeaderWorkerSet
// take (the same schema, in the group apiVersion names). The harness
// serves their webhooks with the cluster CA's certificate for 127.0.0.1,
// so their own certificate rotation (which writes a Secret and patches the
// webhook configurations of their Deployment's Service) is off. No leader
// election: one replica, and several clusters on one machine never wait
// on each other. No metrics server: nothing scrapes it, and it would need
// a certificate and delegated authorization of its own.
const managerConfig = `apiVersion: %s
kind: Configuration
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %q
metrics:
  bindAddress: "0"
health:
  healthProbeBindAddress: 127.0.0.1:%d
clientConnection:
  qps: 500
  burst: 500
`

// writeManagerConfig writes managerConfig for apiVersion to path.
func writeManagerConfig(path, apiVersion string, webhookPort int, certDir string, healthPort int) error {
	if err := os.WriteFile(path, fmt.Appendf(nil, managerConfig, apiVersion, webhookPort, certDir, healthPort), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// startJobSet installs JobSet's CRDs, gives the controller its service
// account's identity and the ClusterRole of the pinned release, runs it
// against kube-apiserver and registers its webhooks, trusted through the
// cluster CA. It returns once the webhooks answer: a JobSet created before
// would miss its defaulting.
func (c *Cluster) startJobSet(ctx context.Context) error {
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("creating dynamic client: %w", err)
	}
	// Before 1.31, kube-apiserver compiles a CEL rule that names the field
	// "namespace" (a CEL reserved word) only in its escaped form.
	escape := c.KubeVersion != nil && c.KubeVersion.LessThan(version.MajorMinor(1, 31))
	if err := installCRDs(ctx, dyn, c.opts.binary(JobSetCRDsFile), escape, c.opts.StartTimeout); err != nil {
		return err
	}
	if err := c.grantJobSet(ctx); err != nil {
		return err
	}
	kubeconfig, certDir, err := c.jobSetCredentials()
	if err != nil {
		return err
	}
	// ports[0] serves the webhooks (TLS), ports[1] the health probes.
	start := func(ports []int) (*process, error) {
		configPath := filepath.Join(c.opts.WorkDir, "jobset.yaml")
		if err := writeManagerConfig(configPath, "config.jobset.x-k8s.io/v1alpha1", ports[0], certDir, ports[1]); err != nil {
			return nil, err
		}
		args := []string{"--kubeconfig=" + kubeconfig, "--config=" + configPath}
		return startProcess(JobSetComponent, c.opts.binary(JobSetBinary), args, c.logDir())
	}
	ready := func(ctx context.Context, p *process, ports []int) error {
		// readyz passes once the webhook server listens with its certificate.
		url := fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1])
		return p.waitReady(ctx, c.opts.StartTimeout, func(ctx context.Context) error { return httpOK(ctx, url) })
	}
	p, ports, err := launch(ctx, 2, start, ready)
	if err != nil {
		return fmt.Errorf("starting jobset: %w", err)
	}
	c.register(JobSetComponent, p, ports, start, ready)
	return c.registerJobSetWebhooks(ctx, fmt.Sprintf("https://127.0.0.1:%d", ports[0]))
}

// missingJobSetManifests lists JobSet's manifests that are not in BinDir.
func (o Options) missingJobSetManifests() []string {
	var missing []string
	for _, name := range []string{JobSetCRDsFile, JobSetRBACFile} {
		if info, err := os.Stat(o.binary(name)); err != nil || info.IsDir() {
			missing = append(missing, o.binary(name))
		}
	}
	return missing
}

// installCRDs creates every CustomResourceDefinition of a multi-document
// YAML file and waits until each is Established. JobSet's CRD is 800 KB,
// more than the last-applied annotation of a client-side kubectl apply can
// hold, so it is created directly. With escapeNamespace, the field name
// namespace in validation rules is escaped (escapeNamespaceField).
func installCRDs(ctx context.Context, dyn dynamic.Interface, path string, escapeNamespace bool, timeout time.Duration) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading CRDs (run hack/build-tools.sh jobset): %w", err)
	}
	return createCRDs(ctx, dyn, data, path, escapeNamespace, timeout)
}

// createCRDs is installCRDs of data, read from path.
func createCRDs(ctx context.Context, dyn dynamic.Interface, data []byte, path string, escapeNamespace bool, timeout time.Duration) error {
	crds := dyn.Resource(crdResource)
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var names []string
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return fmt.Errorf("decoding %s: %w", path, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if obj.GetKind() != "CustomResourceDefinition" {
			return fmt.Errorf("%s holds a %s, want only CustomResourceDefinitions", path, obj.GetKind())
		}
		if escapeNamespace {
			if n := escapeNamespaceField(obj.Object); n > 0 {
				klog.FromContext(ctx).Info("Escaped the field name namespace in CEL rules for this kube-apiserver", "crd", obj.GetName(), "rules", n)
			}
		}
		if _, err := crds.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating CRD %s: %w", obj.GetName(), err)
		}
		names = append(names, obj.GetName())
	}
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			crd, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, cond := range conditions {
				m, ok := cond.(map[string]any)
				if ok && m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for CRD %s to be established: %w", name, err)
		}
	}
	return nil
}

// namespaceField is the field namespace selected in a CEL expression
// (t.metadata.namespace), and not a longer name that starts with it.
var namespaceField = regexp.MustCompile(`\.namespace\b`)

// escapeNamespaceField rewrites t.metadata.namespace to
// t.metadata.__namespace__ in every x-kubernetes-validations rule and
// message expression under node, and returns how many it changed.
// namespace is a CEL reserved word, so Kubernetes' CEL declares a field of
// that name as __namespace__; from 1.31 kube-apiserver also resolves the
// plain name (environment compatibility version 1.31), and 1.30 rejects the
// CRD ("undefined field 'namespace'"). JobSet v0.11 and v0.12 write the
// plain name in one rule of spec.volumeClaimPolicies, so on 1.30 the
// harness installs the same check in the form 1.30 compiles. The rewrite is
// textual: a quoted string with ".namespace" in a rule would change too,
// which JobSet's rules do not have.
func escapeNamespaceField(node any) int {
	changed := 0
	switch n := node.(type) {
	case map[string]any:
		for key, value := range n {
			rules, isRules := value.([]any)
			if key != "x-kubernetes-validations" || !isRules {
				changed += escapeNamespaceField(value)
				continue
			}
			for _, r := range rules {
				rule, ok := r.(map[string]any)
				if !ok {
					continue
				}
				for _, field := range []string{"rule", "messageExpression"} {
					if expr, ok := rule[field].(string); ok && namespaceField.MatchString(expr) {
						rule[field] = namespaceField.ReplaceAllString(expr, ".__namespace__")
						changed++
					}
				}
			}
		}
	case []any:
		for _, item := range n {
			changed += escapeNamespaceField(item)
		}
	}
	return changed
}

// grantJobSet gives JobSet's service account the ClusterRole JobSet's
// release ships (config/components/rbac/role.yaml), under the name its
// kustomization gives it. The role lists what the controller and its
// webhooks use; the Secret and webhook-configuration rights of its
// certificate rotation are not needed here.
func (c *Cluster) grantJobSet(ctx context.Context) error {
	if err := c.grantController(ctx, c.opts.binary(JobSetRBACFile), JobSetNamespace, JobSetServiceAccount, jobSetRoleName); err != nil {
		return fmt.Errorf("JobSet: %w (run hack/build-tools.sh jobset)", err)
	}
	return nil
}

// jobSetCredentials writes JobSet's kubeconfig, with a client certificate
// that names its service account as Muster's does, and the directory its
// webhook server reads tls.crt and tls.key from: the harness's certificate
// for 127.0.0.1, which the webhooks' caBundle trusts.
func (c *Cluster) jobSetCredentials() (kubeconfig, certDir string, err error) {
	kubeconfig, err = c.serviceAccountKubeconfig(JobSetComponent, JobSetNamespace, JobSetServiceAccount)
	if err != nil {
		return "", "", err
	}
	certDir, err = c.localServingCertDir(JobSetComponent)
	return kubeconfig, certDir, err
}

// loadAuthority reads back a CA that generatePKI wrote, to issue one more
// leaf certificate.
func loadAuthority(certPath, keyPath string) (*authority, error) {
	certs, err := cert.CertsFromFile(certPath)
	if err != nil || len(certs) == 0 {
		return nil, fmt.Errorf("reading CA certificate %s: %v", certPath, err)
	}
	key, err := keyutil.PrivateKeyFromFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("reading CA key %s: %w", keyPath, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("CA key %s is a %T, which cannot sign", keyPath, key)
	}
	return &authority{cert: certs[0], key: signer}, nil
}

// registerJobSetWebhooks registers JobSet's webhooks as its release
// declares them (config/components/webhook, with the kustomization's name
// prefix and pod selector), pointing at baseURL and trusting the cluster CA.
// JobSet's defaulting matters: its controller expects a JobSet's success
// policy, startup policy and completion mode to be set by it.
func (c *Cluster) registerJobSetWebhooks(ctx context.Context, baseURL string) error {
	caBundle, err := os.ReadFile(c.pki.CACert)
	if err != nil {
		return fmt.Errorf("reading CA bundle: %w", err)
	}
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	// Only pods that JobSet created: the ones its Jobs label with the JobSet's name.
	jobSetPods := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "jobset.sigs.k8s.io/jobset-name", Operator: metav1.LabelSelectorOpExists,
	}}}
	type hook struct {
		name, path string
		rule       admissionregistrationv1.Rule
		operations []admissionregistrationv1.OperationType
		selector   *metav1.LabelSelector
	}
	jobSets := admissionregistrationv1.Rule{APIGroups: []string{JobSetResource.Group}, APIVersions: []string{JobSetResource.Version}, Resources: []string{JobSetResource.Resource}}
	pods := admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}
	create := []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	createUpdate := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	clientConfig := func(path string) admissionregistrationv1.WebhookClientConfig {
		url := baseURL + path
		return admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle}
	}
	rules := func(h hook) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{Operations: h.operations, Rule: h.rule}}
	}

	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: jobSetWebhookPrefix + "mutating-webhook-configuration"}}
	for _, h := range []hook{
		{"mjobset.kb.io", "/mutate-jobset-x-k8s-io-v1alpha2-jobset", jobSets, create, nil},
		{"mpod.kb.io", "/mutate--v1-pod", pods, create, jobSetPods},
	} {
		mutating.Webhooks = append(mutating.Webhooks, admissionregistrationv1.MutatingWebhook{
			Name: h.name, ClientConfig: clientConfig(h.path), Rules: rules(h), ObjectSelector: h.selector,
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		})
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: jobSetWebhookPrefix + "validating-webhook-configuration"}}
	for _, h := range []hook{
		{"vjobset.kb.io", "/validate-jobset-x-k8s-io-v1alpha2-jobset", jobSets, createUpdate, nil},
		{"vpod.kb.io", "/validate--v1-pod", pods, create, jobSetPods},
	} {
		validating.Webhooks = append(validating.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name: h.name, ClientConfig: clientConfig(h.path), Rules: rules(h), ObjectSelector: h.selector,
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		})
	}
	admission := c.Client.AdmissionregistrationV1()
	if _, err := admission.MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("registering JobSet's mutating webhooks: %w", err)
	}
	if _, err := admission.ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("registering JobSet's validating webhooks: %w", err)
	}
	return nil
}

// httpOK GETs a plain-HTTP loopback url and expects 200.
func httpOK(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
