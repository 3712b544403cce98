package pods

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"unicode/utf8"

	evanjsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/podtest"
	"github.com/muster-dev/muster/pkg/manifests"
)

// FuzzHandler feeds arbitrary bodies to both paths. The handler must never
// panic, must answer 200 or 400, must echo the UID of every review it
// accepts, and every patch it returns must apply to the pod it was given.
// Run it with: go test ./pkg/webhook/pods -run '^$' -fuzz FuzzHandler -fuzztime 1m
func FuzzHandler(f *testing.F) {
	seeds := [][]byte{
		reviewRequest(f, admissionv1.Create, podtest.Pod(podtest.InGroup("train")), nil),
		reviewRequest(f, admissionv1.Create, podtest.Pod(podtest.InGroup("train"), podtest.WithGates("a.example.com/x"), podtest.WithFinalizers("keep")), nil),
		reviewRequest(f, admissionv1.Create, podtest.Pod(podtest.InGroup("train"), podtest.OnNode("n")), nil),
		reviewRequest(f, admissionv1.Create, podtest.Pod(podtest.InGroup("Bad"), podtest.Annotation(scheduling.MinCountAnnotation, "0"), podtest.Annotation(scheduling.WorkloadAnnotation, "w")), nil),
		reviewRequest(f, admissionv1.Update, podtest.Pod(podtest.InGroup("other")), podtest.Pod(podtest.InGroup("train"), podtest.Label(scheduling.ManagedLabel, "true"))),
		reviewRequest(f, admissionv1.Update, podtest.Pod(podtest.InGroup("train")), nil),
		reviewRequest(f, admissionv1.Delete, nil, podtest.Pod(podtest.InGroup("train"))),
		[]byte(`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"x"}}`),
		[]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","operation":"CREATE","resource":{"version":"v1","resource":"pods"},"object":{"metadata":{"labels":{"scheduling.muster.dev/pod-group":"g"}},"spec":null}}}`),
		[]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","operation":"CREATE","resource":{"version":"v1","resource":"pods"},"object":[]}}`),
		[]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`),
		[]byte(`{"apiVersion":"v1","kind":"Pod"}`),
		[]byte(`null`),
		[]byte(`{`),
		[]byte(""),
	}
	for _, s := range seeds {
		f.Add(false, s)
		f.Add(true, s)
	}
	h := NewHandler(klog.Background())
	f.Fuzz(func(t *testing.T, validate bool, body []byte) {
		path := manifests.MutatePath
		if validate {
			path = manifests.ValidatePath
		}
		r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)

		req, decodeErr := h.decodeReview(body)
		switch {
		case decodeErr != nil && w.Code != http.StatusBadRequest:
			t.Fatalf("undecodable review (%v) answered %d", decodeErr, w.Code)
		case decodeErr != nil:
			return
		case w.Code != http.StatusOK:
			t.Fatalf("a decodable review answered %d: %s", w.Code, w.Body)
		}
		var review admissionv1.AdmissionReview
		if err := json.Unmarshal(w.Body.Bytes(), &review); err != nil {
			t.Fatalf("response is not JSON: %v", err)
		}
		if review.Response == nil || review.Response.UID != req.UID {
			t.Fatalf("response %+v does not echo UID %q", review.Response, req.UID)
		}
		if review.Response.Patch == nil {
			return
		}
		// kube-apiserver patches the JSON of its typed pod, which is the
		// decoded pod encoded again.
		p, err := h.decodePod(req.Object, "object")
		if err != nil {
			t.Fatalf("patched a pod that does not decode: %v", err)
		}
		patch, err := evanjsonpatch.DecodePatch(review.Response.Patch)
		if err != nil {
			t.Fatalf("patch %s does not decode: %v", review.Response.Patch, err)
		}
		doc, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		out, err := patch.Apply(doc)
		if err != nil {
			t.Fatalf("patch %s does not apply to %s: %v", review.Response.Patch, doc, err)
		}
		var patched corev1.Pod
		if err := json.Unmarshal(out, &patched); err != nil {
			t.Fatalf("patched pod does not decode: %v", err)
		}
		if patched.Labels[scheduling.ManagedLabel] != "true" {
			t.Fatalf("patched pod has labels %v", patched.Labels)
		}
	})
}

// FuzzPod builds pods from arbitrary label and annotation values, which
// random bodies rarely reach. Validation must never panic, and the patch of
// every pod with a group must apply and leave it prepared.
func FuzzPod(f *testing.F) {
	f.Add("train", "", "8", "", "", "", "a.example.com/x", "keep")
	f.Add("Bad_Name", "false", "0", "W", "t.x", "node", scheduling.AdmissionGate, scheduling.TrackingFinalizer)
	f.Add("", "true", "-1", "w", "", "", "", "")
	f.Add("a/b~c", "~1", "2147483648", "", "t", "", "~0/~1", "a/b")
	f.Fuzz(func(t *testing.T, group, managed, minCount, workload, template, nodeName, gate, finalizer string) {
		// Pods reach the webhook as JSON, whose strings are always UTF-8.
		for _, s := range []string{group, managed, minCount, workload, template, nodeName, gate, finalizer} {
			if !utf8.ValidString(s) {
				return
			}
		}
		p := podtest.Pod(podtest.InGroup(group), podtest.Annotation(scheduling.MinCountAnnotation, minCount), podtest.OnNode(nodeName))
		if managed != "" {
			p = podtest.Pod(podtest.InGroup(group), podtest.Label(scheduling.ManagedLabel, managed), podtest.OnNode(nodeName))
		}
		if workload != "" {
			podtest.Annotation(scheduling.WorkloadAnnotation, workload)(p)
		}
		if template != "" {
			podtest.Annotation(scheduling.TemplateAnnotation, template)(p)
		}
		if gate != "" {
			podtest.WithGates(gate)(p)
		}
		if finalizer != "" {
			podtest.WithFinalizers(finalizer)(p)
		}
		_ = validateCreate(p)
		_ = validateUpdate(p, podtest.Pod(podtest.InGroup(workload), podtest.Label(scheduling.ManagedLabel, template)))

		ops, _, _ := mutate(p.DeepCopy())
		if len(ops) == 0 {
			return
		}
		patched := preparedOf(applyOps(t, p, ops))
		if patched.Labels[scheduling.ManagedLabel] != "true" ||
			!slices.Contains(patched.Gates, scheduling.AdmissionGate) ||
			!slices.Contains(patched.Finalizers, scheduling.TrackingFinalizer) ||
			patched.Labels[scheduling.PodGroupLabel] != group {
			t.Fatalf("patch %+v left %+v", ops, patched)
		}
	})
}
