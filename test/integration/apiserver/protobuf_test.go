package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
	"github.com/muster-dev/muster/test/integration/framework"
)

// preferProtobuf is the Accept header of a client-go config that prefers
// protobuf, as kube-controller-manager's (--kube-api-content-type) and the
// metadata client's do.
const preferProtobuf = "application/vnd.kubernetes.protobuf,application/json"

var (
	podGroupsGVR = v1alpha1.SchemeGroupVersion.WithResource("podgroups")
	workloadsGVR = v1alpha1.SchemeGroupVersion.WithResource("workloads")
)

// answers records the Content-Type of every answer a client gets, so that a
// test can tell which encoding the server chose, whatever the client
// managed to decode.
type answers struct {
	mu     sync.Mutex
	byCall map[string]string
}

func newAnswers() *answers { return &answers{byCall: map[string]string{}} }

// key names a call by what the server sees: list, watch or other verbs are
// told apart by method and the watch parameter.
func key(method, path string, watch bool) string {
	return fmt.Sprintf("%s %s watch=%v", method, path, watch)
}

func (a *answers) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil {
			a.mu.Lock()
			a.byCall[key(req.Method, req.URL.Path, req.URL.Query().Get("watch") == "true")] = resp.Header.Get("Content-Type")
			a.mu.Unlock()
		}
		return resp, err
	})
}

// contentType is the Content-Type of the last answer to a call.
func (a *answers) contentType(method, path string, watch bool) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.byCall[key(method, path, watch)]
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// protobufConfig returns a copy of the server's config that prefers
// protobuf and sends protobuf bodies, as kube-controller-manager's does,
// recording the answers it gets.
func protobufConfig(s *framework.Server) (*rest.Config, *answers) {
	cfg := rest.CopyConfig(s.Config)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = preferProtobuf
	a := newAnswers()
	cfg.Wrap(a.wrap)
	return cfg, a
}

// protobufDynamicClient is a dynamic client over a REST client that prefers
// protobuf, as one built from a shared protobuf-preferring config is.
// (dynamic.NewForConfig would reset Accept to JSON.)
func protobufDynamicClient(t *testing.T, cfg *rest.Config) *dynamic.DynamicClient {
	t.Helper()
	dcfg := dynamic.ConfigFor(cfg)
	dcfg.AcceptContentTypes = preferProtobuf
	rc, err := rest.UnversionedRESTClientFor(dcfg)
	if err != nil {
		t.Fatalf("dynamic REST client: %v", err)
	}
	return dynamic.New(rc)
}

// collectionPath is the URL path of a resource's collection; an empty
// namespace means all namespaces.
func collectionPath(gvr schema.GroupVersionResource, namespace string) string {
	if namespace == "" {
		return fmt.Sprintf("/apis/%s/%s/%s", gvr.Group, gvr.Version, gvr.Resource)
	}
	return fmt.Sprintf("/apis/%s/%s/namespaces/%s/%s", gvr.Group, gvr.Version, namespace, gvr.Resource)
}

// seed creates a PodGroup "gang" and a Workload "job" in each namespace.
func seed(ctx context.Context, t *testing.T, s *framework.Server, namespaces ...string) {
	t.Helper()
	for _, n := range namespaces {
		pg := gangGroup("gang", 2)
		pg.Namespace = n
		if _, err := s.Client.SchedulingV1alpha1().PodGroups(n).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create podgroup in %s: %v", n, err)
		}
		wl := workload("job", gangTemplate("workers", 2, nil))
		wl.Namespace = n
		if _, err := s.Client.SchedulingV1alpha1().Workloads(n).Create(ctx, wl, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create workload in %s: %v", n, err)
		}
	}
}

// TestProtobufPreferringListIsAnsweredInJSON lists Muster's resources with
// clients that prefer protobuf, as kube-controller-manager's do: they must
// get JSON, which they decode, not the 406 that left namespaces Terminating
// (issue 19).
func TestProtobufPreferringListIsAnsweredInJSON(t *testing.T) {
	ctx := testContext(t)
	s := framework.StartServer(t)
	seed(ctx, t, s, ns, "team-b")
	cfg, answered := protobufConfig(s)
	typed, err := versioned.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn := protobufDynamicClient(t, cfg)

	typedNames := func(gvr schema.GroupVersionResource, namespace string) ([]string, error) {
		var names []string
		switch gvr {
		case podGroupsGVR:
			list, err := typed.SchedulingV1alpha1().PodGroups(namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			for _, o := range list.Items {
				names = append(names, o.Namespace+"/"+o.Name)
			}
		case workloadsGVR:
			list, err := typed.SchedulingV1alpha1().Workloads(namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			for _, o := range list.Items {
				names = append(names, o.Namespace+"/"+o.Name)
			}
		}
		return names, nil
	}
	dynamicNames := func(gvr schema.GroupVersionResource, namespace string) ([]string, error) {
		list, err := dyn.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		var names []string
		for _, o := range list.Items {
			names = append(names, o.GetNamespace()+"/"+o.GetName())
		}
		return names, nil
	}

	tests := []struct {
		name      string
		list      func(schema.GroupVersionResource, string) ([]string, error)
		gvr       schema.GroupVersionResource
		namespace string
		want      []string
	}{
		{"typed podgroups in a namespace", typedNames, podGroupsGVR, ns, []string{"default/gang"}},
		{"typed podgroups in all namespaces", typedNames, podGroupsGVR, "", []string{"default/gang", "team-b/gang"}},
		{"typed workloads in a namespace", typedNames, workloadsGVR, ns, []string{"default/job"}},
		{"typed workloads in all namespaces", typedNames, workloadsGVR, "", []string{"default/job", "team-b/job"}},
		{"dynamic podgroups in a namespace", dynamicNames, podGroupsGVR, ns, []string{"default/gang"}},
		{"dynamic podgroups in all namespaces", dynamicNames, podGroupsGVR, "", []string{"default/gang", "team-b/gang"}},
		{"dynamic workloads in a namespace", dynamicNames, workloadsGVR, ns, []string{"default/job"}},
		{"dynamic workloads in all namespaces", dynamicNames, workloadsGVR, "", []string{"default/job", "team-b/job"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			names, err := tc.list(tc.gvr, tc.namespace)
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			sort.Strings(names)
			if strings.Join(names, ",") != strings.Join(tc.want, ",") {
				t.Errorf("listed %v, want %v", names, tc.want)
			}
			if got := answered.contentType(http.MethodGet, collectionPath(tc.gvr, tc.namespace), false); got != "application/json" {
				t.Errorf("answered in %q, want application/json", got)
			}
		})
	}
}

// TestProtobufPreferringWatchDeliversEvents watches with a client that
// prefers protobuf: the server streams JSON and the client sees the create.
func TestProtobufPreferringWatchDeliversEvents(t *testing.T) {
	ctx := testContext(t)
	s := framework.StartServer(t)
	cfg, answered := protobufConfig(s)
	typed, err := versioned.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn := protobufDynamicClient(t, cfg)
	// Each case watches a namespace of its own from the start, so the
	// first event is the create it makes.
	tests := []struct {
		name      string
		gvr       schema.GroupVersionResource
		namespace string
		watch     func(namespace string) (watch.Interface, error)
		create    func(namespace string) error
	}{
		{"typed podgroups", podGroupsGVR, "typed-podgroups",
			func(n string) (watch.Interface, error) {
				return typed.SchedulingV1alpha1().PodGroups(n).Watch(ctx, metav1.ListOptions{})
			},
			func(n string) error {
				pg := gangGroup("created", 2)
				pg.Namespace = n
				_, err := s.Client.SchedulingV1alpha1().PodGroups(n).Create(ctx, pg, metav1.CreateOptions{})
				return err
			}},
		{"typed workloads", workloadsGVR, "typed-workloads",
			func(n string) (watch.Interface, error) {
				return typed.SchedulingV1alpha1().Workloads(n).Watch(ctx, metav1.ListOptions{})
			},
			func(n string) error {
				wl := workload("created", gangTemplate("workers", 2, nil))
				wl.Namespace = n
				_, err := s.Client.SchedulingV1alpha1().Workloads(n).Create(ctx, wl, metav1.CreateOptions{})
				return err
			}},
		{"dynamic podgroups", podGroupsGVR, "dynamic-podgroups",
			func(n string) (watch.Interface, error) {
				return dyn.Resource(podGroupsGVR).Namespace(n).Watch(ctx, metav1.ListOptions{})
			},
			func(n string) error {
				pg := gangGroup("created", 2)
				pg.Namespace = n
				_, err := s.Client.SchedulingV1alpha1().PodGroups(n).Create(ctx, pg, metav1.CreateOptions{})
				return err
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := tc.watch(tc.namespace)
			if err != nil {
				t.Fatalf("watch: %v", err)
			}
			defer w.Stop()
			if err := tc.create(tc.namespace); err != nil {
				t.Fatalf("create: %v", err)
			}
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatalf("watch closed, want ADDED created")
				}
				obj, isObject := ev.Object.(metav1.Object)
				if ev.Type != watch.Added || !isObject || obj.GetName() != "created" {
					t.Fatalf("watch event %s %#v, want ADDED created", ev.Type, ev.Object)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("no watch event, want ADDED created")
			}
			if got := answered.contentType(http.MethodGet, collectionPath(tc.gvr, tc.namespace), true); got != "application/json" {
				t.Errorf("watch streamed %q, want application/json", got)
			}
		})
	}
}

// TestProtobufBodyIsUnsupportedMediaType sends a PodGroup in a protobuf
// envelope, which no Muster type can be decoded from: the answer is a
// clear 415 naming the media types read (a custom resource's server panics
// on one), and nothing is written.
func TestProtobufBodyIsUnsupportedMediaType(t *testing.T) {
	ctx := testContext(t)
	s := framework.StartServer(t)
	if _, err := s.Client.SchedulingV1alpha1().PodGroups(ns).Create(ctx, gangGroup("gang", 2), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	hc, err := rest.HTTPClientFor(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	// k8s.io/apimachinery's protobuf envelope: the magic "k8s\x00", then a
	// runtime.Unknown naming the kind, with an empty raw message.
	envelope := protobufEnvelope("scheduling.muster.dev/v1alpha1", "PodGroup")
	collection := collectionPath(podGroupsGVR, ns)
	tests := []struct {
		name   string
		method string
		path   string
	}{
		{"create", http.MethodPost, collection},
		{"update", http.MethodPut, collection + "/gang"},
		{"status update", http.MethodPut, collection + "/gang/status"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(ctx, tc.method, s.Config.Host+tc.path, bytes.NewReader(envelope))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", runtime.ContentTypeProtobuf)
			req.Header.Set("Accept", "application/json")
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatalf("%s: %v", tc.method, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnsupportedMediaType {
				t.Fatalf("code = %d, want 415: %s", resp.StatusCode, body)
			}
			if !strings.Contains(string(body), "accepted media types include: application/json, application/yaml") {
				t.Errorf("answer does not name the media types read: %s", body)
			}
		})
	}
	list, err := s.Client.SchedulingV1alpha1().PodGroups(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Generation != 1 {
		t.Errorf("after refused writes: %v, %d PodGroups, want the one created, unchanged", err, len(list.Items))
	}
}

// protobufEnvelope is a well-formed protobuf request body for kind.
func protobufEnvelope(apiVersion, kind string) []byte {
	field := func(number byte, value []byte) []byte {
		return append([]byte{number<<3 | 2, byte(len(value))}, value...)
	}
	typeMeta := append(field(1, []byte(apiVersion)), field(2, []byte(kind))...)
	unknown := append(field(1, typeMeta), field(2, nil)...)
	return append([]byte("k8s\x00"), unknown...)
}

// TestProtobufOnlyAcceptIsRefusedBeforeAnyWrite asks for Muster's objects
// in protobuf only. As for a custom resource, the answer is 406 and it
// comes before the request does anything: a DELETECOLLECTION deleted
// everything and then failed to encode what it deleted.
func TestProtobufOnlyAcceptIsRefusedBeforeAnyWrite(t *testing.T) {
	ctx := testContext(t)
	s := framework.StartServer(t)
	seed(ctx, t, s, ns)
	hc, err := rest.HTTPClientFor(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		method string
		path   string
	}{
		{"list podgroups", http.MethodGet, collectionPath(podGroupsGVR, ns)},
		{"get a workload", http.MethodGet, collectionPath(workloadsGVR, ns) + "/job"},
		{"deletecollection of podgroups", http.MethodDelete, collectionPath(podGroupsGVR, ns)},
		{"delete a workload", http.MethodDelete, collectionPath(workloadsGVR, ns) + "/job"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(ctx, tc.method, s.Config.Host+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Accept", runtime.ContentTypeProtobuf)
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatalf("%s: %v", tc.method, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotAcceptable {
				t.Fatalf("code = %d, want 406: %q", resp.StatusCode, body)
			}
			if !bytes.Contains(body, []byte("only the following media types are accepted: application/json, application/yaml")) {
				t.Errorf("answer does not name the media types served: %q", body)
			}
		})
	}
	if _, err := s.Client.SchedulingV1alpha1().PodGroups(ns).Get(ctx, "gang", metav1.GetOptions{}); err != nil {
		t.Errorf("PodGroup after a refused deletecollection: %v", err)
	}
	if _, err := s.Client.SchedulingV1alpha1().Workloads(ns).Get(ctx, "job", metav1.GetOptions{}); err != nil {
		t.Errorf("Workload after a refused delete: %v", err)
	}
}
