package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
	"github.com/muster-dev/muster/pkg/manifests"
	"github.com/muster-dev/muster/test/cluster"
	"github.com/muster-dev/muster/test/ocirun"
)

// TestImageServesChartArguments runs the image `make image` built (the
// OCI layout in MUSTER_IMAGE_LAYOUT) under runc as one more replica of
// each of the chart's Deployments, muster-apiserver and muster-webhook, as
// a kubelet would run their pods: the chart's args and env, their Secrets
// at their own mount paths, the service account token where the
// in-cluster config reads it (muster-webhook mounts none), the image's
// user and entrypoint on a read-only root. Each replica must run as the
// image's user with exactly the chart's args; the API's must answer
// /readyz over TLS verified with the CA Muster keeps in its Secret, serve
// PodGroups written through the aggregator to an authenticated client
// (delegated authentication and authorization through its in-cluster
// credentials) and refuse an anonymous one; the webhook's must answer its
// /readyz and the pod webhook for kube-apiserver's client certificate.
func TestImageServesChartArguments(t *testing.T) {
	layoutDir := os.Getenv("MUSTER_IMAGE_LAYOUT")
	if layoutDir == "" {
		t.Skip("MUSTER_IMAGE_LAYOUT is unset: `make e2e` builds the image for this host (make image) and sets it to _out/image/oci")
	}
	if os.Geteuid() != 0 {
		t.Skip("runc creates the container's namespaces and cgroup as root only: run the suite as root (the project's machines do)")
	}
	ociRuntime := os.Getenv("MUSTER_OCI_RUNTIME")
	if ociRuntime == "" {
		ociRuntime = ocirun.DefaultRuntime
	}
	ctx := testContext(t, 4*time.Minute)
	start := time.Now()
	r, err := env.StartMusterImage(ctx, layoutDir, ociRuntime)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Stop(); err != nil {
			t.Errorf("stopping the container: %v", err)
		}
	})
	t.Logf("the image's muster-apiserver replica (container %s) was ready in %v at %s", r.ID, time.Since(start).Round(time.Millisecond), r.URL)
	start = time.Now()
	hook, err := env.StartWebhookImage(ctx, layoutDir, ociRuntime)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := hook.Stop(); err != nil {
			t.Errorf("stopping the webhook's container: %v", err)
		}
	})
	t.Logf("the image's muster-webhook replica (container %s) was ready in %v at %s", hook.ID, time.Since(start).Round(time.Millisecond), hook.WebhookURL)

	checkImageProcess(t, ctx, r, layoutDir, cluster.MusterDeployment, "--secure-port="+urlPort(t, r.URL), "--webhook-port=0")
	checkImageProcess(t, ctx, hook, layoutDir, cluster.WebhookDeployment, "--webhook-port="+urlPort(t, hook.WebhookURL))
	cfg, err := env.MusterConfig(r.URL)
	if err != nil {
		t.Fatal(err)
	}
	checkImageReadyz(t, ctx, cfg, hook.WebhookURL)
	checkImageServesPodGroups(t, ctx, cfg)
	checkImageWebhook(t, ctx, hook.WebhookURL)
	for _, c := range []*cluster.ImageReplica{r, hook} {
		if !c.Running() {
			t.Errorf("the container %s exited during the test:\n%s", c.ID, c.Log())
		}
	}
}

// checkImageProcess checks the container's process: the image's user and
// group, a read-only root, and exactly the args of the container of the
// chart's Deployment deployment after the image's entrypoint, then the
// ports the harness sets per replica and the bind address. No kubeconfig
// flag: the server reads the in-cluster config.
func checkImageProcess(t *testing.T, ctx context.Context, r *cluster.ImageReplica, layoutDir, deployment string, ports ...string) {
	t.Helper()
	img, err := ocirun.HostImage(layoutDir)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	uid, gid, err := ocirun.ParseUser(cf.Config.User)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := r.Pid()
	if err != nil {
		t.Fatal(err)
	}
	id, err := ocirun.ProcessIdentity(pid)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range id.UIDs {
		if u != uid {
			t.Errorf("the container's process has user ids %v, want all %d (the image's user %q)", id.UIDs, uid, cf.Config.User)
			break
		}
	}
	for _, g := range id.GIDs {
		if g != gid {
			t.Errorf("the container's process has group ids %v, want all %d (the image's user %q)", id.GIDs, gid, cf.Config.User)
			break
		}
	}
	opts, err := ocirun.MountOptions(pid, "/")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(opts, "ro") {
		t.Errorf("the container's root is mounted %v, want ro", opts)
	}

	d, err := kube.AppsV1().Deployments(cluster.MusterNamespace).Get(ctx, deployment, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := append([]string(nil), cf.Config.Entrypoint...)
	for _, arg := range d.Spec.Template.Spec.Containers[0].Args {
		if !strings.HasPrefix(arg, "--secure-port=") && !strings.HasPrefix(arg, "--webhook-port=") {
			want = append(want, arg)
		}
	}
	want = append(append(want, ports...), "--bind-address=127.0.0.1")
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
	if !slices.Equal(got, want) {
		t.Errorf("the container runs\n  %q\nwant the image's entrypoint, the chart's args and the replica's ports:\n  %q", got, want)
	}
}

// urlPort is the port of an https://127.0.0.1:<port> URL.
func urlPort(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// checkImageReadyz reads /readyz of the API (cfg trusts the CA bundle
// Muster keeps in its Secret, for the Service's name) and of the webhook
// listener (the chart's readiness probe), verifying both certificates.
func checkImageReadyz(t *testing.T, ctx context.Context, cfg *rest.Config, webhookURL string) {
	t.Helper()
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil || string(body) != "ok" {
		t.Errorf("the API's /readyz answered %q, %v; want ok", body, err)
	}
	code, body, err := webhookCall(ctx, http.MethodGet, webhookURL+"/readyz", nil)
	if err != nil || code != http.StatusOK || string(body) != "ok" {
		t.Errorf("the webhook's /readyz answered %d %q, %v; want 200 ok", code, body, err)
	}
}

// checkImageServesPodGroups creates a PodGroup through the aggregator (the
// harness's replica) and lists it through the image's replica as the
// admin, whose client certificate the replica authenticates and
// authorizes through kube-apiserver with its in-cluster credentials; an
// anonymous list is refused.
func checkImageServesPodGroups(t *testing.T, ctx context.Context, cfg *rest.Config) {
	t.Helper()
	ns := namespace(t, ctx)
	if _, err := muster.SchedulingV1alpha1().PodGroups(ns).Create(ctx, newGroupObject(ns, "through-aggregator", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	image := versioned.NewForConfigOrDie(cfg)
	list, err := image.SchedulingV1alpha1().PodGroups(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing PodGroups through the image's replica: %v", err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "through-aggregator" {
		t.Errorf("the image's replica lists %d PodGroups in %s, want the one created through the aggregator", len(list.Items), ns)
	}
	anonymous := versioned.NewForConfigOrDie(rest.AnonymousClientConfig(cfg))
	_, err = anonymous.SchedulingV1alpha1().PodGroups(ns).List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) {
		t.Errorf("an anonymous list through the image's replica returned %v, want Forbidden or Unauthorized", err)
	}
}

// checkImageWebhook sends the image's webhook listener a review of a
// labelled pod's create, as kube-apiserver would, with its client
// certificate: the answer allows it and adds Muster's gate.
func checkImageWebhook(t *testing.T, ctx context.Context, webhookURL string) {
	t.Helper()
	pod := newPod("default", "image-webhook", podOpts{group: "g"})
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	review, err := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID("image-webhook"),
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: pod.Namespace,
			Name:      pod.Name,
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: raw},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	code, body, err := webhookCall(ctx, http.MethodPost, webhookURL+manifests.MutatePath, review)
	if err != nil || code != http.StatusOK {
		t.Fatalf("the mutating webhook answered %d %q, %v", code, body, err)
	}
	var got admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &got); err != nil || got.Response == nil {
		t.Fatalf("the mutating webhook answered %q: %v", body, err)
	}
	if !got.Response.Allowed || got.Response.UID != "image-webhook" || !bytes.Contains(got.Response.Patch, []byte(scheduling.AdmissionGate)) {
		t.Errorf("the mutating webhook answered allowed=%v uid=%q patch %s; want the pod allowed with %s added",
			got.Response.Allowed, got.Response.UID, got.Response.Patch, scheduling.AdmissionGate)
	}
}

// webhookCall sends a request to the webhook listener as kube-apiserver
// does: with its client certificate, verifying Muster's.
func webhookCall(ctx context.Context, method, url string, body []byte) (int, []byte, error) {
	tlsConfig, err := env.WebhookClientTLS()
	if err != nil {
		return 0, nil, err
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, err = out.ReadFrom(resp.Body)
	return resp.StatusCode, bytes.TrimSpace(out.Bytes()), err
}
