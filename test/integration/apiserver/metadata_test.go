package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/muster-dev/muster/test/integration/framework"
)

const (
	protobuf = "application/vnd.kubernetes.protobuf"
	// protobufStream is the Content-Type of a protobuf watch.
	protobufStream = "application/vnd.kubernetes.protobuf;stream=watch"
)

// metadataClient is a k8s.io/client-go/metadata client, which prefers
// protobuf as kube-controller-manager's namespace controller and garbage
// collector use it, recording the answers it gets.
func metadataClient(t *testing.T, s *framework.Server) (metadata.Interface, *answers) {
	t.Helper()
	cfg, answered := protobufConfig(s)
	client, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("metadata client: %v", err)
	}
	return client, answered
}

// TestNamespaceDeletionDeletesMusterObjects does what kube-controller-
// manager's namespace controller does to empty a namespace
// (pkg/controller/namespace/deletion): a DELETECOLLECTION, then a LIST to
// see what remains, both through the metadata client. The DELETECOLLECTION
// answers with the deleted objects, which a protobuf-preferring client got
// as a 406, so the namespace stayed Terminating (issue 19).
func TestNamespaceDeletionDeletesMusterObjects(t *testing.T) {
	ctx := testContext(t)
	s := framework.StartServer(t)
	const doomed = "doomed"
	seed(ctx, t, s, doomed, ns)
	client, answered := metadataClient(t, s)
	for _, gvr := range []schema.GroupVersionResource{podGroupsGVR, workloadsGVR} {
		t.Run(gvr.Resource, func(t *testing.T) {
			if err := client.Resource(gvr).Namespace(doomed).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
				t.Fatalf("deletecollection: %v", err)
			}
			if got := answered.contentType(http.MethodDelete, collectionPath(gvr, doomed), false); got != "application/json" {
				t.Errorf("deletecollection answered in %q, want application/json", got)
			}
			left, err := client.Resource(gvr).Namespace(doomed).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			if len(left.Items) != 0 {
				t.Errorf("%d %s left in the namespace, want 0", len(left.Items), gvr.Resource)
			}
			others, err := client.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil || len(others.Items) != 1 {
				t.Errorf("another namespace: %v, %d %s, want 1 untouched", err, len(others.Items), gvr.Resource)
			}
		})
	}
}

// TestMetadataIsServedInProtobuf runs what the garbage collector runs:
// metadata LIST, GET and WATCH (PartialObjectMetadata) and a metadata
// informer, all of which must stay protobuf. This passed before the
// fix; it guards against the simpler fix of dropping protobuf from the
// group's serializer, after which every metadata WATCH silently fell back
// to JSON (it fails then).
func TestMetadataIsServedInProtobuf(t *testing.T) {
	ctx := testContext(t)
	s := framework.StartServer(t)
	seed(ctx, t, s, ns)
	client, answered := metadataClient(t, s)

	tests := []struct {
		gvr    schema.GroupVersionResource
		seeded string
		create func(ctx context.Context, name string) error
	}{
		{podGroupsGVR, "gang", func(ctx context.Context, name string) error {
			_, err := s.Client.SchedulingV1alpha1().PodGroups(ns).Create(ctx, gangGroup(name, 2), metav1.CreateOptions{})
			return err
		}},
		{workloadsGVR, "job", func(ctx context.Context, name string) error {
			_, err := s.Client.SchedulingV1alpha1().Workloads(ns).Create(ctx, workload(name, gangTemplate("workers", 2, nil)), metav1.CreateOptions{})
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.gvr.Resource, func(t *testing.T) {
			all := collectionPath(tc.gvr, "")
			list, err := client.Resource(tc.gvr).List(ctx, metav1.ListOptions{})
			if err != nil || len(list.Items) != 1 || list.Items[0].Name != tc.seeded {
				t.Fatalf("metadata list: %v, %d items, want %s", err, len(list.Items), tc.seeded)
			}
			if got := answered.contentType(http.MethodGet, all, false); got != protobuf {
				t.Errorf("metadata list answered in %q, want protobuf", got)
			}

			got, err := client.Resource(tc.gvr).Namespace(ns).Get(ctx, tc.seeded, metav1.GetOptions{})
			if err != nil || got.Name != tc.seeded {
				t.Fatalf("metadata get: %v", err)
			}
			if ct := answered.contentType(http.MethodGet, collectionPath(tc.gvr, ns)+"/"+tc.seeded, false); ct != protobuf {
				t.Errorf("metadata get answered in %q, want protobuf", ct)
			}

			// The informer lists through a watch (WatchListClient, on by
			// default since client-go 1.35), then keeps watching.
			informerCtx, stop := context.WithCancel(ctx)
			defer stop()
			factory := metadatainformer.NewSharedInformerFactory(client, 0)
			informer := factory.ForResource(tc.gvr)
			factory.Start(informerCtx.Done())
			if !cache.WaitForCacheSync(informerCtx.Done(), informer.Informer().HasSynced) {
				t.Fatalf("metadata informer did not sync")
			}
			if _, err := informer.Lister().ByNamespace(ns).Get(tc.seeded); err != nil {
				t.Errorf("informer's object %s: %v", tc.seeded, err)
			}
			w, err := client.Resource(tc.gvr).Namespace(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
			if err != nil {
				t.Fatalf("metadata watch: %v", err)
			}
			defer w.Stop()
			if err := tc.create(ctx, "later"); err != nil {
				t.Fatalf("create: %v", err)
			}
			select {
			case ev := <-w.ResultChan():
				if m, ok := ev.Object.(*metav1.PartialObjectMetadata); ev.Type != watch.Added || !ok || m.Name != "later" {
					t.Fatalf("metadata watch event %s %T, want ADDED PartialObjectMetadata later", ev.Type, ev.Object)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("no metadata watch event")
			}
			if got := answered.contentType(http.MethodGet, collectionPath(tc.gvr, ns), true); got != protobufStream {
				t.Errorf("metadata watch streamed %q, want %q", got, protobufStream)
			}
			err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
				_, err := informer.Lister().ByNamespace(ns).Get("later")
				return err == nil, nil
			})
			if err != nil {
				t.Fatalf("the informer never saw the object created after it synced: %v", err)
			}
			if got := answered.contentType(http.MethodGet, all, true); got != protobufStream {
				t.Errorf("the informer's watch streamed %q, want %q", got, protobufStream)
			}
		})
	}
}

// TestKubectlTableStillServed asks for the Table that kubectl get and
// kubectl get --watch print, with kubectl's own Accept header.
func TestKubectlTableStillServed(t *testing.T) {
	ctx := testContext(t)
	s := framework.StartServer(t)
	seed(ctx, t, s, ns)
	raw, err := s.RawClient()
	if err != nil {
		t.Fatal(err)
	}
	const kubectlAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
	for _, gvr := range []schema.GroupVersionResource{podGroupsGVR, workloadsGVR} {
		t.Run("get "+gvr.Resource, func(t *testing.T) {
			body, err := raw.Get().AbsPath(collectionPath(gvr, ns)).SetHeader("Accept", kubectlAccept).DoRaw(ctx)
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			var table metav1.Table
			if err := json.Unmarshal(body, &table); err != nil || table.Kind != "Table" || len(table.Rows) != 1 {
				t.Fatalf("got %v rows of %q (%v), want a Table of 1 row", len(table.Rows), table.Kind, err)
			}
		})
		t.Run("get --watch "+gvr.Resource, func(t *testing.T) {
			watchCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			stream, err := raw.Get().AbsPath(collectionPath(gvr, ns)).Param("watch", "true").
				SetHeader("Accept", kubectlAccept).Stream(watchCtx)
			if err != nil {
				t.Fatalf("watch: %v", err)
			}
			defer stream.Close()
			var event struct {
				Type   string       `json:"type"`
				Object metav1.Table `json:"object"`
			}
			if err := json.NewDecoder(stream).Decode(&event); err != nil {
				t.Fatalf("decoding the first event: %v", err)
			}
			if event.Type != "ADDED" || event.Object.Kind != "Table" || len(event.Object.Rows) != 1 {
				t.Errorf("first event %s of %q with %d rows, want ADDED of a Table with 1 row", event.Type, event.Object.Kind, len(event.Object.Rows))
			}
		})
	}
}
