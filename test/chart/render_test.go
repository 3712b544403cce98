package chart

import (
	"crypto/x509"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestDefaultRendering: the default values install two API server replicas
// on a one-member bundled etcd, with Muster's internal certificates (no
// caBundle rendered, the certificates Role, no serving-cert volume), the
// NetworkPolicies, the pre-delete hook, and no ServiceMonitor, cert-manager
// object or prepare policy.
func TestDefaultRendering(t *testing.T) {
	objs := render(t, "muster-system")
	d := mustFind(t, objs, "Deployment", "muster-apiserver")
	if got := int64Field(t, d, "spec", "replicas"); got != 2 {
		t.Errorf("replicas = %d, want 2", got)
	}
	flags := args(t, d)
	for flag, want := range map[string]string{
		"etcd-servers":    "https://muster-etcd.muster-system.svc:2379",
		"cert-management": "internal",
		"cert-secret":     "muster-system/muster-apiserver-certs",
		"cert-service":    "muster-system/muster-apiserver",
		"secure-port":     "8443",
		"webhook-port":    "0",
		"cert-extra-sans": "muster-webhook.muster-system.svc,muster-webhook.muster-system.svc.cluster.local",
	} {
		if flags[flag] != want {
			t.Errorf("--%s = %q, want %q", flag, flags[flag], want)
		}
	}
	for _, absent := range []string{"tls-cert-file", "tls-private-key-file", "webhook-client-ca-file", "etcd-prefix"} {
		if v, ok := flags[absent]; ok {
			t.Errorf("--%s=%s is passed; want it absent by default", absent, v)
		}
	}
	if img, _, _ := unstructured.NestedString(container(t, d), "image"); img != "muster-apiserver:v0.1.0" {
		t.Errorf("image = %q, want the chart's appVersion as tag", img)
	}
	if vols := volumeSecrets(t, d); vols["etcd-client"] != "muster-etcd-client" || vols["serving-cert"] != "" {
		t.Errorf("secret volumes = %v, want etcd-client only", vols)
	}
	checkWebhookDeployment(t, objs, "muster-system", "muster-apiserver-certs")
	// clientAuth.mode Auto: helm template reads no cluster, so finds no
	// Secret muster-webhook-client-ca, and the webhook takes any caller.
	if v, ok := args(t, mustFind(t, objs, "Deployment", "muster-webhook"))["webhook-client-ca-file"]; ok {
		t.Errorf("muster-webhook --webhook-client-ca-file=%s with clientAuth.mode Auto and no Secret", v)
	}

	as := mustFind(t, objs, "APIService", "v1alpha1.scheduling.muster.dev")
	if _, found, _ := unstructured.NestedString(as.Object, "spec", "caBundle"); found {
		t.Error("the APIService renders caBundle: helm would own it and blank what Muster writes")
	}
	if len(as.GetAnnotations()) != 0 {
		t.Errorf("the APIService has annotations %v, want none with internal certificates", as.GetAnnotations())
	}
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		w := mustFind(t, objs, kind, "muster-pod-webhook")
		if b := caBundles(w); !slices.Equal(b, []string{""}) {
			t.Errorf("%s caBundles = %v, want one webhook with none rendered", kind, b)
		}
	}
	mustFind(t, objs, "Role", "muster-apiserver:certificates")
	mustFind(t, objs, "RoleBinding", "muster-apiserver:certificates")

	sts := mustFind(t, objs, "StatefulSet", "muster-etcd")
	if got := int64Field(t, sts, "spec", "replicas"); got != 1 {
		t.Errorf("etcd replicas = %d, want 1", got)
	}
	if got := args(t, sts)["initial-cluster"]; got != "$(POD_NAME)=http://127.0.0.1:2380" {
		t.Errorf("etcd --initial-cluster = %q, want the loopback peer of a single member", got)
	}
	for _, s := range []string{"muster-etcd-server", "muster-etcd-client"} {
		sec := mustFind(t, objs, "Secret", s)
		if c := certificate(t, sec, "ca.crt"); !c.IsCA {
			t.Errorf("Secret %s ca.crt is not a CA", s)
		}
		certificate(t, sec, "tls.crt")
	}
	mustFind(t, objs, "NetworkPolicy", "muster-apiserver")
	mustFind(t, objs, "NetworkPolicy", "muster-etcd")
	mustFind(t, objs, "PodDisruptionBudget", "muster-apiserver")
	mustFind(t, objs, "PriorityClass", "muster-capacity-request")
	if got := len(objs.OfKind("ValidatingAdmissionPolicy")); got != 7 {
		t.Errorf("%d ValidatingAdmissionPolicies, want 7", got)
	}
	if got := len(objs.OfKind("ValidatingAdmissionPolicyBinding")); got != 7 {
		t.Errorf("%d ValidatingAdmissionPolicyBindings, want 7", got)
	}

	job := mustFind(t, objs, "Job", "muster-uninstall")
	if h := job.GetAnnotations()["helm.sh/hook"]; h != "pre-delete" {
		t.Errorf("Job muster-uninstall hook = %q, want pre-delete", h)
	}
	if raw, _, _ := unstructured.NestedStringSlice(container(t, job), "args"); len(raw) == 0 || raw[0] != "uninstall" {
		t.Errorf("Job muster-uninstall args = %v, want muster-apiserver's uninstall mode", raw)
	}
	if img, _, _ := unstructured.NestedString(container(t, job), "image"); img != "muster-apiserver:v0.1.0" {
		t.Errorf("Job muster-uninstall image = %q, want muster-apiserver's", img)
	}
	if l := job.GetLabels()["app.kubernetes.io/name"]; l == "muster-apiserver" {
		t.Error("the hook's Job carries muster-apiserver's name: it would wait for itself")
	}

	for _, kind := range []string{"Namespace", "ServiceMonitor", "Certificate", "Issuer", "MutatingAdmissionPolicy"} {
		if got := objs.OfKind(kind); len(got) != 0 {
			t.Errorf("the default rendering has a %s %s", kind, got[0].GetName())
		}
	}
}

// TestHAEtcdRendering: etcd.replicas 3 bootstraps three members by their
// stable names over TLS peers, all at once, with a budget that keeps a
// quorum, and certificates for every member's name.
func TestHAEtcdRendering(t *testing.T) {
	objs := render(t, "muster-system", "ha-etcd.yaml")
	sts := mustFind(t, objs, "StatefulSet", "muster-etcd")
	if got := int64Field(t, sts, "spec", "replicas"); got != 3 {
		t.Errorf("etcd replicas = %d, want 3", got)
	}
	if p, _, _ := unstructured.NestedString(sts.Object, "spec", "podManagementPolicy"); p != "Parallel" {
		t.Errorf("podManagementPolicy = %q, want Parallel: the first member cannot be Ready alone", p)
	}
	flags := args(t, sts)
	wantCluster := "muster-etcd-0=https://muster-etcd-0.muster-etcd.muster-system.svc:2380," +
		"muster-etcd-1=https://muster-etcd-1.muster-etcd.muster-system.svc:2380," +
		"muster-etcd-2=https://muster-etcd-2.muster-etcd.muster-system.svc:2380"
	if flags["initial-cluster"] != wantCluster {
		t.Errorf("--initial-cluster = %q, want %q", flags["initial-cluster"], wantCluster)
	}
	if flags["peer-client-cert-auth"] != "true" || flags["listen-peer-urls"] != "https://0.0.0.0:2380" {
		t.Errorf("peers: --peer-client-cert-auth=%q --listen-peer-urls=%q, want TLS peers with client auth",
			flags["peer-client-cert-auth"], flags["listen-peer-urls"])
	}
	servers := args(t, mustFind(t, objs, "Deployment", "muster-apiserver"))["etcd-servers"]
	if got := strings.Count(servers, "https://muster-etcd-"); got != 3 {
		t.Errorf("--etcd-servers = %q, want the three members", servers)
	}
	svc := mustFind(t, objs, "Service", "muster-etcd")
	if p, _, _ := unstructured.NestedBool(svc.Object, "spec", "publishNotReadyAddresses"); !p {
		t.Error("the etcd Service does not publish unready members: they could never find each other")
	}
	pdb := mustFind(t, objs, "PodDisruptionBudget", "muster-etcd")
	if got := int64Field(t, pdb, "spec", "maxUnavailable"); got != 1 {
		t.Errorf("etcd maxUnavailable = %d, want 1", got)
	}
	np := mustFind(t, objs, "NetworkPolicy", "muster-etcd")
	if rules, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress"); len(rules) != 2 {
		t.Errorf("etcd NetworkPolicy has %d rules, want client from Muster and peers from etcd", len(rules))
	}
	c := certificate(t, mustFind(t, objs, "Secret", "muster-etcd-server"), "tls.crt")
	for i := range 3 {
		name := fmt.Sprintf("muster-etcd-%d.muster-etcd.muster-system.svc", i)
		if !slices.Contains(c.DNSNames, name) {
			t.Errorf("etcd's certificate lacks %s: %v", name, c.DNSNames)
		}
	}
	if !slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageServerAuth) || !slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		t.Errorf("etcd's certificate usages %v, want server and client auth (peers present it)", c.ExtKeyUsage)
	}
}

// TestExternalEtcdRendering: with your own etcd, nothing of the bundled one
// is rendered, and the servers dial your endpoints with your Secret.
func TestExternalEtcdRendering(t *testing.T) {
	objs := render(t, "muster-system", "external-etcd.yaml")
	d := mustFind(t, objs, "Deployment", "muster-apiserver")
	flags := args(t, d)
	if want := "https://etcd-0.example.internal:2379,https://etcd-1.example.internal:2379,https://etcd-2.example.internal:2379"; flags["etcd-servers"] != want {
		t.Errorf("--etcd-servers = %q, want %q", flags["etcd-servers"], want)
	}
	if flags["etcd-prefix"] != "/muster" {
		t.Errorf("--etcd-prefix = %q, want /muster", flags["etcd-prefix"])
	}
	if got := volumeSecrets(t, d)["etcd-client"]; got != "my-etcd-client" {
		t.Errorf("etcd-client volume's Secret = %q, want my-etcd-client", got)
	}
	for _, o := range []struct{ kind, name string }{
		{"StatefulSet", "muster-etcd"}, {"Service", "muster-etcd"}, {"NetworkPolicy", "muster-etcd"},
		{"Secret", "muster-etcd-server"}, {"Secret", "muster-etcd-client"},
	} {
		if objs.Find(o.kind, o.name) != nil {
			t.Errorf("%s %s is rendered with an external etcd", o.kind, o.name)
		}
	}
}

// TestCertManagerRendering: cert-manager issues the serving certificate
// and etcd's; its CA injector is asked to fill every caBundle, which the
// chart leaves out; the servers read the serving pair from files and get no
// certificate RBAC.
func TestCertManagerRendering(t *testing.T) {
	objs := render(t, "muster-system", "cert-manager.yaml")
	const inject = "muster-system/muster-apiserver-serving-cert"
	as := mustFind(t, objs, "APIService", "v1alpha1.scheduling.muster.dev")
	if got := as.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != inject {
		t.Errorf("APIService inject-ca-from = %q, want %q", got, inject)
	}
	if _, found, _ := unstructured.NestedString(as.Object, "spec", "caBundle"); found {
		t.Error("the APIService renders caBundle: re-applying would fight the CA injector")
	}
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		w := mustFind(t, objs, kind, "muster-pod-webhook")
		if got := w.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != inject {
			t.Errorf("%s inject-ca-from = %q, want %q", kind, got, inject)
		}
		if b := caBundles(w); !slices.Equal(b, []string{""}) {
			t.Errorf("%s caBundles = %v, want none rendered", kind, b)
		}
	}
	var certs []string
	for _, c := range objs.OfKind("Certificate") {
		certs = append(certs, c.GetName())
	}
	slices.Sort(certs)
	if want := []string{"muster-apiserver-serving-cert", "muster-ca", "muster-etcd-ca", "muster-etcd-client", "muster-etcd-server"}; !slices.Equal(certs, want) {
		t.Errorf("Certificates %v, want %v", certs, want)
	}
	d := mustFind(t, objs, "Deployment", "muster-apiserver")
	flags := args(t, d)
	if flags["cert-management"] != "none" || flags["tls-cert-file"] != "/var/run/serving-cert/tls.crt" {
		t.Errorf("--cert-management=%q --tls-cert-file=%q, want none and the mounted Secret", flags["cert-management"], flags["tls-cert-file"])
	}
	if _, ok := flags["cert-secret"]; ok {
		t.Error("--cert-secret is passed with cert-manager")
	}
	if got := volumeSecrets(t, d)["serving-cert"]; got != "muster-apiserver-serving-cert" {
		t.Errorf("serving-cert volume's Secret = %q", got)
	}
	checkWebhookDeployment(t, objs, "muster-system", "muster-apiserver-serving-cert")
	names, _, _ := unstructured.NestedStringSlice(mustFind(t, objs, "Certificate", "muster-apiserver-serving-cert").Object, "spec", "dnsNames")
	if !slices.Contains(names, "muster-webhook.muster-system.svc") {
		t.Errorf("the serving Certificate's dnsNames %v leave out the webhook's Service", names)
	}
	for _, o := range []struct{ kind, name string }{
		{"Role", "muster-apiserver:certificates"}, {"Secret", "muster-etcd-server"}, {"Secret", "muster-etcd-client"},
	} {
		if objs.Find(o.kind, o.name) != nil {
			t.Errorf("%s %s is rendered with cert-manager", o.kind, o.name)
		}
	}
}

// TestEverythingSwitchedRendering: every switch away from its default, in
// another namespace.
func TestEverythingSwitchedRendering(t *testing.T) {
	objs := render(t, "gangs", "everything.yaml")
	sm := mustFind(t, objs, "ServiceMonitor", "muster-apiserver")
	if ns := sm.GetNamespace(); ns != "gangs" {
		t.Errorf("ServiceMonitor in %q, want gangs", ns)
	}
	crb := mustFind(t, objs, "ClusterRoleBinding", "muster-metrics-reader")
	subjects, _, _ := unstructured.NestedSlice(crb.Object, "subjects")
	if len(subjects) != 1 || subjects[0].(map[string]any)["name"] != "prometheus-k8s" || subjects[0].(map[string]any)["namespace"] != "monitoring" {
		t.Errorf("muster-metrics-reader subjects = %v, want monitoring/prometheus-k8s", subjects)
	}
	if np := objs.OfKind("NetworkPolicy"); len(np) != 0 {
		t.Errorf("NetworkPolicy %s rendered with networkPolicy.enabled=false", np[0].GetName())
	}
	if objs.Find("PodDisruptionBudget", "muster-apiserver") != nil {
		t.Error("a PodDisruptionBudget for one replica would block every drain of its node")
	}
	if objs.Find("Job", "muster-uninstall") != nil {
		t.Error("the uninstall hook is rendered with uninstallHook.enabled=false")
	}
	mustFind(t, objs, "MutatingAdmissionPolicy", "muster-pod-prepare")

	w := mustFind(t, objs, "Deployment", "muster-webhook")
	if got := args(t, w)["webhook-client-ca-file"]; got != "/var/run/webhook-client-ca/ca.crt" {
		t.Errorf("muster-webhook --webhook-client-ca-file = %q", got)
	}
	if got := volumeSecrets(t, w)["webhook-client-ca"]; got != "kube-apiserver-webhook-client-ca" {
		t.Errorf("muster-webhook's webhook-client-ca volume's Secret = %q", got)
	}
	d := mustFind(t, objs, "Deployment", "muster-apiserver")
	flags := args(t, d)
	for flag, want := range map[string]string{
		"admission":          "count",
		"preemption":         "false",
		"autoscaling":        "off",
		"namespace-selector": "kubernetes.io/metadata.name notin (kube-system,gangs,monitoring)",
		"etcd-servers":       "https://muster-etcd.gangs.svc:2379",
		"cert-secret":        "gangs/muster-apiserver-certs",

		// Whole numbers stay whole, however large (not 2e+06).
		"max-podgroups-per-namespace": "2000000",
		"created-podgroup-qps":        "0.5",
		"created-podgroup-burst":      "5",
	} {
		if flags[flag] != want {
			t.Errorf("--%s = %q, want %q", flag, flags[flag], want)
		}
	}
	if _, ok := flags["webhook-client-ca-file"]; ok || volumeSecrets(t, d)["webhook-client-ca"] != "" {
		t.Error("muster-apiserver, which serves no webhook, is given the webhook's client CA")
	}
	if img, _, _ := unstructured.NestedString(container(t, d), "image"); !strings.HasPrefix(img, "muster-apiserver@sha256:") {
		t.Errorf("image = %q, want it by digest", img)
	}

	// One namespace selector everywhere: the flag's, the webhooks' and
	// every binding's that selects namespaces.
	want := []string{"kube-system", "gangs", "monitoring"}
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		hooks, _, _ := unstructured.NestedSlice(mustFind(t, objs, kind, "muster-pod-webhook").Object, "webhooks")
		if got := namespaceSelectorValues(t, hooks[0].(map[string]any), "namespaceSelector"); !slices.Equal(got, want) {
			t.Errorf("%s excludes %v, want %v", kind, got, want)
		}
	}
	for _, b := range []struct{ kind, name string }{
		{"ValidatingAdmissionPolicyBinding", "muster-pod-labels"},
		{"ValidatingAdmissionPolicyBinding", "muster-statefulset-ordered-ready"},
		{"MutatingAdmissionPolicyBinding", "muster-pod-prepare"},
	} {
		o := mustFind(t, objs, b.kind, b.name)
		if got := namespaceSelectorValues(t, o.Object, "spec", "matchResources", "namespaceSelector"); !slices.Equal(got, want) {
			t.Errorf("%s %s excludes %v, want %v", b.kind, b.name, got, want)
		}
	}
	for _, o := range objs {
		if o.GetNamespace() != "" && o.GetNamespace() != "gangs" && o.GetNamespace() != "kube-system" {
			t.Errorf("%s %s is in namespace %s, want the release's", o.GetKind(), o.GetName(), o.GetNamespace())
		}
	}
}

// TestInvalidValuesFail: values that cannot work are refused at render,
// not found out on the cluster.
func TestInvalidValuesFail(t *testing.T) {
	tests := []struct {
		values, want string
	}{
		{"bad-etcd-replicas.yaml", "replicas"},
		{"bad-external-etcd.yaml", "etcd.external.endpoints"},
	}
	for _, tt := range tests {
		t.Run(tt.values, func(t *testing.T) {
			_, err := Template(helmBinary(t), repoRoot+"/charts/muster", "muster-system", []string{"testdata/" + tt.values})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("rendering with %s: %v, want an error naming %s", tt.values, err, tt.want)
			}
		})
	}
}

// TestPriorityClassQuotasRendering: opted in, each listed namespace gets a
// ResourceQuota that admits no pod of the listed PriorityClasses; by
// default, none is rendered.
func TestPriorityClassQuotasRendering(t *testing.T) {
	if q := render(t, "muster-system").OfKind("ResourceQuota"); len(q) != 0 {
		t.Errorf("ResourceQuota %s/%s rendered by default; it is opt-in", q[0].GetNamespace(), q[0].GetName())
	}
	objs := render(t, "muster-system", "priority-quotas.yaml")
	quotas := objs.OfKind("ResourceQuota")
	var namespaces []string
	for _, q := range quotas {
		namespaces = append(namespaces, q.GetNamespace())
		if q.GetName() != "muster-priority-classes" {
			t.Errorf("ResourceQuota %s/%s, want the name muster-priority-classes", q.GetNamespace(), q.GetName())
		}
		var rq corev1.ResourceQuota
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(q.Object, &rq); err != nil {
			t.Fatal(err)
		}
		if pods := rq.Spec.Hard[corev1.ResourcePods]; len(rq.Spec.Hard) != 1 || !pods.IsZero() || pods.String() != "0" {
			t.Errorf("%s: hard %v, want pods: 0 alone", q.GetNamespace(), rq.Spec.Hard)
		}
		want := &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
			ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn,
			Values: []string{"system-cluster-critical", "system-node-critical", "urgent"},
		}}}
		if diff := cmp.Diff(want, rq.Spec.ScopeSelector); diff != "" {
			t.Errorf("%s: scopeSelector (-want +got):\n%s", q.GetNamespace(), diff)
		}
	}
	if !slices.Equal(namespaces, []string{"team-a", "team-b"}) {
		t.Errorf("ResourceQuotas in %v, want team-a and team-b", namespaces)
	}
}

// checkWebhookDeployment: the webhook runs in a Deployment of its own,
// muster-webhook, as muster-apiserver --webhook-only on the serving
// certificate's two files alone (not the CAs' keys), with no service
// account token and no role; its Service is what the webhook
// configurations call, and muster-apiserver's Service has no webhook port.
func checkWebhookDeployment(t *testing.T, objs Objects, ns, certSecret string) {
	t.Helper()
	w := mustFind(t, objs, "Deployment", "muster-webhook")
	flags := args(t, w)
	for flag, want := range map[string]string{
		"webhook-only":         "",
		"webhook-port":         "9443",
		"tls-cert-file":        "/var/run/serving-cert/tls.crt",
		"tls-private-key-file": "/var/run/serving-cert/tls.key",
	} {
		if got, ok := flags[flag]; !ok || got != want {
			t.Errorf("muster-webhook --%s = %q (%v), want %q", flag, got, ok, want)
		}
	}
	for _, absent := range []string{"etcd-servers", "cert-management", "kubeconfig"} {
		if v, ok := flags[absent]; ok {
			t.Errorf("muster-webhook is passed --%s=%s; it has no API", absent, v)
		}
	}
	if got := volumeSecrets(t, w)["serving-cert"]; got != certSecret {
		t.Errorf("muster-webhook's serving-cert volume is Secret %q, want %q", got, certSecret)
	}
	vols, _, _ := unstructured.NestedSlice(w.Object, "spec", "template", "spec", "volumes")
	for _, v := range vols {
		v := v.(map[string]any)
		if v["name"] != "serving-cert" {
			continue
		}
		items, _, _ := unstructured.NestedSlice(v, "secret", "items")
		var keys []string
		for _, it := range items {
			keys = append(keys, it.(map[string]any)["key"].(string))
		}
		if !slices.Equal(keys, []string{"tls.crt", "tls.key"}) {
			t.Errorf("muster-webhook mounts keys %v of the certificate Secret, want tls.crt and tls.key alone", keys)
		}
	}
	if mount, _, _ := unstructured.NestedBool(w.Object, "spec", "template", "spec", "automountServiceAccountToken"); mount {
		t.Error("muster-webhook mounts a service account token; it calls no API")
	}
	if sa, _, _ := unstructured.NestedString(w.Object, "spec", "template", "spec", "serviceAccountName"); sa != "muster-webhook" {
		t.Errorf("muster-webhook runs as %q", sa)
	}
	for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
		for _, b := range objs.OfKind(kind) {
			subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
			for _, s := range subjects {
				if s.(map[string]any)["name"] == "muster-webhook" {
					t.Errorf("%s %s binds a role to muster-webhook", kind, b.GetName())
				}
			}
		}
	}
	svc := mustFind(t, objs, "Service", "muster-webhook")
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if len(ports) != 1 || ports[0].(map[string]any)["targetPort"] != "webhook" {
		t.Errorf("Service muster-webhook ports = %v, want the one webhook port", ports)
	}
	api := mustFind(t, objs, "Service", "muster-apiserver")
	if apiPorts, _, _ := unstructured.NestedSlice(api.Object, "spec", "ports"); len(apiPorts) != 1 {
		t.Errorf("Service muster-apiserver ports = %v, want the API's alone", apiPorts)
	}
	for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		hooks, _, _ := unstructured.NestedSlice(mustFind(t, objs, kind, "muster-pod-webhook").Object, "webhooks")
		for _, h := range hooks {
			if name, _, _ := unstructured.NestedString(h.(map[string]any), "clientConfig", "service", "name"); name != "muster-webhook" {
				t.Errorf("%s calls Service %q, want muster-webhook", kind, name)
			}
			if got, _, _ := unstructured.NestedString(h.(map[string]any), "clientConfig", "service", "namespace"); got != ns {
				t.Errorf("%s calls a Service in %q, want %q", kind, got, ns)
			}
		}
	}
}
