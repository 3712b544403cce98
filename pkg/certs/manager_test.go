package certs

import (
	"bytes"
	"context"
	"encoding/base64"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
)

const (
	testNS, testSecret, testAPIService, testWebhooks = "muster-system", "muster-apiserver-certs", "v1alpha1.scheduling.muster.dev", "muster-pod-webhook"
)

// newTestManager returns a Manager on fake clients holding an APIService
// and both webhook configurations with no caBundle.
func newTestManager(t *testing.T) (*Manager, *fake.Clientset, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	kube := fake.NewClientset(
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: testWebhooks}, Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "m"}}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: testWebhooks}, Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "v"}}},
	)
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": testAPIService},
		"spec":     map[string]any{"group": "scheduling.muster.dev", "version": "v1alpha1"},
	}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{apiServices: "APIServiceList"}, apiService)
	m := New(kube, dyn, testNS, testSecret, testCfg, Targets{APIService: testAPIService, WebhookConfigurations: testWebhooks}, &ServingContent{})
	return m, kube, dyn
}

// published returns what the APIService and the webhooks hold.
func publishedBundles(t *testing.T, ctx context.Context, m *Manager, dyn *dynamicfake.FakeDynamicClient) [][]byte {
	t.Helper()
	obj, err := dyn.Resource(apiServices).Get(ctx, testAPIService, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	encoded, _, _ := unstructured.NestedString(obj.Object, "spec", "caBundle")
	apiBundle, _ := base64.StdEncoding.DecodeString(encoded)
	mut, err := m.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, testWebhooks, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	val, err := m.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, testWebhooks, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return [][]byte{apiBundle, mut.Webhooks[0].ClientConfig.CABundle, val.Webhooks[0].ClientConfig.CABundle}
}

// waitSecretBundle waits until the Secret holds a bundle that every target
// holds too, and returns the Secret's CA.
func waitSecretBundle(t *testing.T, ctx context.Context, m *Manager, kube *fake.Clientset, dyn *dynamicfake.FakeDynamicClient) []byte {
	t.Helper()
	var ca []byte
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		s, err := kube.CoreV1().Secrets(testNS).Get(ctx, testSecret, metav1.GetOptions{})
		if err != nil || len(s.Data[BundleKey]) == 0 {
			return false, nil
		}
		for _, b := range publishedBundles(t, ctx, m, dyn) {
			if !bytes.Equal(b, s.Data[BundleKey]) {
				return false, nil
			}
		}
		cert, key := m.Content().CurrentCertKeyContent()
		if !bytes.Equal(cert, s.Data[ServingCertKey]) || !bytes.Equal(key, s.Data[ServingKeyKey]) {
			return false, nil
		}
		ca = s.Data[CACertKey]
		return true, nil
	})
	if err != nil {
		t.Fatalf("Secret, caBundles and served certificate never agreed: %v", err)
	}
	return ca
}

func TestManagerCreatesPublishesAndRecreates(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m, kube, dyn := newTestManager(t)
	if err := m.Start(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	ca := waitSecretBundle(t, ctx, m, kube, dyn)

	// Deleting the Secret must not change what kube-apiserver trusts: the
	// replica recreates it from what it last read.
	if err := kube.CoreV1().Secrets(testNS).Delete(ctx, testSecret, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Secrets(testNS).Get(ctx, testSecret, metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("Secret not recreated: %v", err)
	}
	if got := waitSecretBundle(t, ctx, m, kube, dyn); !bytes.Equal(got, ca) {
		t.Error("recreated Secret holds a new CA; want the one kube-apiserver trusts")
	}
}

func TestManagerLoadsAnExistingSecret(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m, kube, dyn := newTestManager(t)
	stored, _ := mustPlan(t, time.Now(), &State{}, noneYet)
	secret := newSecretObject(testNS, testSecret, stored.Data())
	if _, err := kube.CoreV1().Secrets(testNS).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := waitSecretBundle(t, ctx, m, kube, dyn); !bytes.Equal(got, stored.CA.CertPEM) {
		t.Error("the stored CA was replaced; want it loaded")
	}
	if cert, _ := m.Content().CurrentCertKeyContent(); !bytes.Equal(cert, stored.Serving.CertPEM) {
		t.Error("the stored serving certificate is not the one served")
	}
}
