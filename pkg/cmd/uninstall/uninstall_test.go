package uninstall

import (
	"context"
	"slices"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/manifests"
)

const ns = "muster-system"

func pod(namespace, name string, labels map[string]string, gates []string, finalizers []string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels, Finalizers: finalizers}}
	for _, g := range gates {
		p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: g})
	}
	return p
}

var (
	group    = map[string]string{scheduling.PodGroupLabel: "g"}
	server   = map[string]string{"app.kubernetes.io/name": "muster-apiserver"}
	capacity = map[string]string{scheduling.CapacityRequestLabel: "g"}
)

// newDynamic serves the APIService and the policy kinds; unserved lists
// kinds whose list answers NotFound, as a cluster that does not serve them.
func newDynamic(unserved []string, objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	listKinds := map[schema.GroupVersionResource]string{apiServiceResource: "APIServiceList"}
	for _, gvr := range policyResources {
		listKinds[gvr] = "List"
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objs...)
	for _, r := range unserved {
		dyn.PrependReactor("list", r, func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: r}, "")
		})
	}
	return dyn
}

func unstructuredObject(apiVersion, kind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	return u
}

func testOptions() Options {
	o := DefaultOptions()
	o.PollInterval = time.Millisecond
	return o
}

// stopsWithDeployment deletes the server pods when their Deployment is
// deleted, as the garbage collector would.
func stopsWithDeployment(kube *fake.Clientset) {
	kube.PrependReactor("delete", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l, _ := kube.Tracker().List(corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"), ns)
		for _, p := range l.(*corev1.PodList).Items {
			if p.Labels["app.kubernetes.io/name"] == "muster-apiserver" {
				_ = kube.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), ns, p.Name)
			}
		}
		return false, nil, nil
	})
}

func TestRunReleasesPods(t *testing.T) {
	tests := []struct {
		name           string
		pod            *corev1.Pod
		wantGates      []string
		wantFinalizers []string
		wantGone       bool
	}{
		{"a gated pod loses the gate", pod("a", "gated", group, []string{scheduling.AdmissionGate}, []string{scheduling.TrackingFinalizer}), nil, nil, false},
		{"a running pod loses the finalizer", pod("a", "running", group, nil, []string{scheduling.TrackingFinalizer}), nil, nil, false},
		{"another tool's gate and finalizer stay", pod("b", "other", group,
			[]string{"example.com/other", scheduling.AdmissionGate}, []string{"example.com/keep", scheduling.TrackingFinalizer}),
			[]string{"example.com/other"}, []string{"example.com/keep"}, false},
		{"an unlabelled pod is left as it is", pod("b", "unlabelled", nil, []string{"example.com/other"}, []string{"example.com/keep"}),
			[]string{"example.com/other"}, []string{"example.com/keep"}, false},
		{"a capacity-request pod is deleted", pod("c", "cr-0", capacity, nil, nil), nil, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kube := fake.NewClientset(tt.pod,
				&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "muster-apiserver"}},
				pod(ns, "muster-apiserver-1", server, nil, nil))
			stopsWithDeployment(kube)
			if err := Run(context.Background(), kube, newDynamic(nil), testOptions()); err != nil {
				t.Fatal(err)
			}
			got, err := kube.CoreV1().Pods(tt.pod.Namespace).Get(context.Background(), tt.pod.Name, metav1.GetOptions{})
			if tt.wantGone {
				if !apierrors.IsNotFound(err) {
					t.Fatalf("pod still there (%v), want it deleted", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var gates []string
			for _, g := range got.Spec.SchedulingGates {
				gates = append(gates, g.Name)
			}
			if !slices.Equal(gates, tt.wantGates) || !slices.Equal(got.Finalizers, tt.wantFinalizers) {
				t.Errorf("gates %v, finalizers %v; want %v, %v", gates, got.Finalizers, tt.wantGates, tt.wantFinalizers)
			}
		})
	}
}

// TestRunRemovesMusterFromAdmission: the webhooks, the APIService and every
// muster-* policy and binding go; other tools' policies stay, and a kind
// the cluster does not serve is no error.
func TestRunRemovesMusterFromAdmission(t *testing.T) {
	const v1 = "admissionregistration.k8s.io/v1"
	kube := fake.NewClientset(
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: manifests.ConfigurationName}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: manifests.ConfigurationName}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "other-webhook"}},
	)
	dyn := newDynamic([]string{"mutatingadmissionpolicies", "mutatingadmissionpolicybindings"},
		unstructuredObject("apiregistration.k8s.io/v1", "APIService", APIServiceName),
		unstructuredObject("apiregistration.k8s.io/v1", "APIService", "v1.other.example.com"),
		unstructuredObject(v1, "ValidatingAdmissionPolicy", manifests.LabelsPolicyName),
		unstructuredObject(v1, "ValidatingAdmissionPolicyBinding", manifests.LabelsPolicyName),
		unstructuredObject(v1, "ValidatingAdmissionPolicy", "muster-statefulset-ordered-ready"),
		unstructuredObject(v1, "ValidatingAdmissionPolicy", "other-policy"),
	)
	if err := Run(context.Background(), kube, dyn, testOptions()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, manifests.ConfigurationName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("mutating webhook still there: %v", err)
	}
	if _, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, manifests.ConfigurationName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("validating webhook still there: %v", err)
	}
	if _, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "other-webhook", metav1.GetOptions{}); err != nil {
		t.Errorf("another tool's webhook was deleted: %v", err)
	}
	names := func(gvr schema.GroupVersionResource) []string {
		l, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, o := range l.Items {
			n = append(n, o.GetName())
		}
		return n
	}
	if got := names(apiServiceResource); !slices.Equal(got, []string{"v1.other.example.com"}) {
		t.Errorf("APIServices left: %v, want only another group's", got)
	}
	if got := names(policyResources[1]); !slices.Equal(got, []string{"other-policy"}) {
		t.Errorf("policies left: %v, want only another tool's", got)
	}
	if got := names(policyResources[0]); len(got) != 0 {
		t.Errorf("bindings left: %v", got)
	}
}

// TestRunNeverReleasesWhileAServerRuns: a running controller would put its
// finalizer back, so when a replica does not go, Run fails before it
// touches a pod.
func TestRunNeverReleasesWhileAServerRuns(t *testing.T) {
	held := pod("a", "gated", group, []string{scheduling.AdmissionGate}, []string{scheduling.TrackingFinalizer})
	kube := fake.NewClientset(held, pod(ns, "muster-apiserver-1", server, nil, nil))
	o := testOptions()
	o.StopTimeout = 20 * time.Millisecond
	if err := Run(context.Background(), kube, newDynamic(nil), o); err == nil {
		t.Fatal("Run succeeded while a muster-apiserver pod still ran")
	}
	got, err := kube.CoreV1().Pods("a").Get(context.Background(), "gated", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Finalizers, held.Finalizers) || len(got.Spec.SchedulingGates) != 1 {
		t.Errorf("pod changed while a server ran: gates %v, finalizers %v", got.Spec.SchedulingGates, got.Finalizers)
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Options)
		ok     bool
	}{
		{"defaults", func(*Options) {}, true},
		{"no namespace", func(o *Options) { o.Namespace = "" }, false},
		{"no deployment", func(o *Options) { o.Deployment = "" }, false},
		{"no server selector: it would wait on every pod of the namespace", func(o *Options) { o.ServerSelector = "" }, false},
		{"no stop timeout", func(o *Options) { o.StopTimeout = 0 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOptions()
			tt.modify(&o)
			if err := o.validate(); (err == nil) != tt.ok {
				t.Errorf("validate() = %v, want ok %v", err, tt.ok)
			}
		})
	}
}
