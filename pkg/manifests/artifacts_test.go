package manifests

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
	"sigs.k8s.io/yaml"

	"github.com/muster-dev/muster/pkg/admission/quota"
	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// readArtifact reads one of the static manifests, named relative to the
// repository root (artifacts.go), from this package's folder.
func readArtifact(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(name)))
	if err != nil {
		t.Fatalf("reading artifacts: %v", err)
	}
	return data
}

// renderedObject decodes into obj the object of kind and name in the
// chart's default rendering, WebhooksFile.
func renderedObject(t *testing.T, kind, name string, obj any) {
	t.Helper()
	for i, doc := range strings.Split(string(readArtifact(t, WebhooksFile)), "\n---\n") {
		var meta struct {
			Kind     string
			Metadata struct{ Name string }
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("decoding document %d: %v", i, err)
		}
		if meta.Kind == kind && meta.Metadata.Name == name {
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				t.Fatalf("decoding %s %s: %v", kind, name, err)
			}
			return
		}
	}
	t.Fatalf("no %s %s in %s", kind, name, WebhooksFile)
}

// TestArtifactsMatchBuilder keeps the webhook configurations of the chart's
// default rendering (WebhooksFile), which deployments apply, in step with
// the configurations this package builds for the local cluster: the same
// webhooks, rules and selectors.
func TestArtifactsMatchBuilder(t *testing.T) {
	var mutating admissionregistrationv1.MutatingWebhookConfiguration
	var validating admissionregistrationv1.ValidatingWebhookConfiguration
	renderedObject(t, "MutatingWebhookConfiguration", ConfigurationName, &mutating)
	renderedObject(t, "ValidatingWebhookConfiguration", ConfigurationName, &validating)
	cfg := Config{
		Service:  &ServiceReference{Namespace: "muster-system", Name: WebhookService, Port: DefaultPort},
		CABundle: mutating.Webhooks[0].ClientConfig.CABundle,
	}
	wantM, err := MutatingWebhookConfiguration(cfg)
	if err != nil {
		t.Fatal(err)
	}
	wantV, err := ValidatingWebhookConfiguration(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mutating.Annotations, validating.Annotations = nil, nil
	if !apiequality.Semantic.DeepEqual(wantM.Webhooks, mutating.Webhooks) {
		t.Errorf("mutating webhooks differ from the builder:\n%s", diff.Diff(wantM.Webhooks, mutating.Webhooks))
	}
	if !apiequality.Semantic.DeepEqual(wantV.Webhooks, validating.Webhooks) {
		t.Errorf("validating webhooks differ from the builder:\n%s", diff.Diff(wantV.Webhooks, validating.Webhooks))
	}
}

var update = flag.Bool("update", false, "rewrite the static manifests that the builders generate (PoliciesFile) from the builders")

// TestPolicyArtifactsMatchBuilder keeps PoliciesFile in step with the
// policies and bindings this package builds for the local cluster, in the
// order ValidatingPolicies lists them. With -update it rewrites the file
// from them, keeping its leading comment.
func TestPolicyArtifactsMatchBuilder(t *testing.T) {
	var want []any
	for _, p := range ValidatingPolicies() {
		want = append(want, p.Policy, p.Binding)
	}
	if *update {
		writePolicies(t, want)
	}
	docs := strings.Split(string(readArtifact(t, PoliciesFile)), "\n---\n")
	if len(docs) != len(want) {
		t.Fatalf("policies.yaml has %d documents, want %d", len(docs), len(want))
	}
	for i, w := range want {
		var got any
		switch w.(type) {
		case *admissionregistrationv1.ValidatingAdmissionPolicy:
			got = &admissionregistrationv1.ValidatingAdmissionPolicy{}
		default:
			got = &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		}
		if err := yaml.UnmarshalStrict([]byte(docs[i]), got); err != nil {
			t.Fatalf("decoding document %d: %v", i, err)
		}
		if !apiequality.Semantic.DeepEqual(w, got) {
			t.Errorf("document %d differs from the builder:\n%s", i, diff.Diff(w, got))
		}
	}
}

// TestPreparePolicyArtifactsMatchBuilder keeps PreparePolicyFile in step
// with PreparePolicy and its binding.
func TestPreparePolicyArtifactsMatchBuilder(t *testing.T) {
	docs := strings.Split(string(readArtifact(t, PreparePolicyFile)), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("mutating-policy.yaml has %d documents, want 2", len(docs))
	}
	var policy admissionregistrationv1.MutatingAdmissionPolicy
	var binding admissionregistrationv1.MutatingAdmissionPolicyBinding
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &policy); err != nil {
		t.Fatalf("decoding the policy: %v", err)
	}
	if err := yaml.UnmarshalStrict([]byte(docs[1]), &binding); err != nil {
		t.Fatalf("decoding the binding: %v", err)
	}
	if want := PreparePolicy(); !apiequality.Semantic.DeepEqual(want, &policy) {
		t.Errorf("policy differs from the builder:\n%s", diff.Diff(want, &policy))
	}
	if want := PreparePolicyBinding(Config{}); !apiequality.Semantic.DeepEqual(want, &binding) {
		t.Errorf("binding differs from the builder:\n%s", diff.Diff(want, &binding))
	}
}

// TestConfinedPermissionOnlyInMustersRole: the policies find Muster's
// controller by the permission ConfinedVerb on ConfinedResource, so
// RBACFile must grant it in Muster's ClusterRole, bound
// cluster-wide, and in no other role, and no role may grant UngrantedVerb
// or every verb on it (a holder of every verb is taken for an
// administrator).
func TestConfinedPermissionOnlyInMustersRole(t *testing.T) {
	data := readArtifact(t, RBACFile)
	grants := func(r rbacv1.PolicyRule, verb string) bool {
		return slices.Contains(r.APIGroups, scheduling.GroupName) && slices.Contains(r.Resources, ConfinedResource) && slices.Contains(r.Verbs, verb)
	}
	var holders []string
	bound := false
	for i, doc := range strings.Split(string(data), "\n---\n") {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("decoding document %d: %v", i, err)
		}
		switch meta.Kind {
		case "ClusterRole", "Role":
			var role rbacv1.ClusterRole
			if err := yaml.Unmarshal([]byte(doc), &role); err != nil {
				t.Fatalf("decoding document %d: %v", i, err)
			}
			for _, r := range role.Rules {
				if grants(r, ConfinedVerb) {
					holders = append(holders, meta.Kind+"/"+role.Name)
				}
				for _, verb := range []string{UngrantedVerb, rbacv1.VerbAll} {
					if grants(r, verb) {
						t.Errorf("%s %s grants %q on %s: the policies would not confine its holders", meta.Kind, role.Name, verb, ConfinedResource)
					}
				}
			}
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			if err := yaml.Unmarshal([]byte(doc), &b); err != nil {
				t.Fatalf("decoding document %d: %v", i, err)
			}
			bound = bound || (b.RoleRef.Kind == "ClusterRole" && b.RoleRef.Name == "muster-apiserver")
		}
	}
	if want := []string{"ClusterRole/muster-apiserver"}; !slices.Equal(holders, want) {
		t.Errorf("roles granting %q on %s: %v, want %v", ConfinedVerb, ConfinedResource, holders, want)
	}
	if !bound {
		t.Error("no ClusterRoleBinding binds ClusterRole muster-apiserver: its permission must hold cluster-wide")
	}
}

// TestQuotaPolicyNamesWhatThePluginCounts: muster-quota-writes lets Muster
// change the usage of exactly the resources its quota admission plugin
// counts; a kind counted without being named here would have every usage
// write of it denied.
func TestQuotaPolicyNamesWhatThePluginCounts(t *testing.T) {
	candidates := append(CountedQuotaResources(), corev1.ResourcePods, corev1.ResourceCPU, "count/pods", "podgroups.scheduling.muster.dev",
		"count/widgets.scheduling.muster.dev", "count/jobs.batch")
	var counted []corev1.ResourceName
	for _, e := range quota.Configuration(nil).Evaluators() {
		counted = append(counted, e.MatchingResources(candidates)...)
	}
	slices.Sort(counted)
	want := slices.Sorted(slices.Values(CountedQuotaResources()))
	if !slices.Equal(counted, want) {
		t.Errorf("the quota plugin counts %v; the policy names %v", counted, want)
	}
}

// TestPriorityClassArtifactMatchesBuilder keeps PriorityClassFile, which
// deployments apply, in step with PriorityClass, which the local cluster
// creates.
func TestPriorityClassArtifactMatchesBuilder(t *testing.T) {
	var got schedulingv1.PriorityClass
	if err := yaml.UnmarshalStrict(readArtifact(t, PriorityClassFile), &got); err != nil {
		t.Fatalf("decoding the PriorityClass: %v", err)
	}
	if want := PriorityClass(); !apiequality.Semantic.DeepEqual(want, &got) {
		t.Errorf("priorityclass.yaml differs from the builder:\n%s", diff.Diff(want, &got))
	}
}

// writePolicies writes objs to PoliciesFile as YAML documents, each after
// the comment that led the file's document of the same place.
func writePolicies(t *testing.T, objs []any) {
	t.Helper()
	old := strings.Split(string(readArtifact(t, PoliciesFile)), "\n---\n")
	docs := make([]string, len(objs))
	for i, o := range objs {
		out, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		var comment []string
		if i < len(old) {
			for _, line := range strings.Split(old[i], "\n") {
				if !strings.HasPrefix(line, "#") {
					break
				}
				comment = append(comment, line+"\n")
			}
		}
		docs[i] = strings.Join(comment, "") + strings.TrimSuffix(string(out), "\n")
	}
	if err := os.WriteFile(filepath.Join("..", "..", filepath.FromSlash(PoliciesFile)), []byte(strings.Join(docs, "\n---\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
