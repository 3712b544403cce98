package apiserver

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// BenchmarkListEncoding measures what a LIST of N PodGroups costs in each
// form a client now gets it: the full list in JSON (what a protobuf-
// preferring client such as kube-controller-manager's DELETECOLLECTION now
// receives) against the PartialObjectMetadataList in protobuf that the
// garbage collector and the namespace controller's LIST use, and the same
// metadata list in JSON for scale. One op is an encode by the server plus
// a decode by the client; bytes/list is the size on the wire.
//
//	go test ./pkg/apiserver -run '^$' -bench ListEncoding -benchmem
func BenchmarkListEncoding(b *testing.B) {
	groupJSON := serializerFor(b, Codecs.WithoutConversion(), runtime.ContentTypeJSON)
	metaJSON := serializerFor(b, metainternalversionscheme.Codecs.WithoutConversion(), runtime.ContentTypeJSON)
	metaProtobuf := serializerFor(b, metainternalversionscheme.Codecs.WithoutConversion(), runtime.ContentTypeProtobuf)

	for _, n := range []int{100, 1000} {
		list := podGroupList(n)
		metadataList := asMetadataList(list)
		cases := []struct {
			name       string
			serializer runtime.Serializer
			object     runtime.Object
			into       func() runtime.Object
		}{
			{"PodGroupList/json", groupJSON, list, func() runtime.Object { return &v1alpha1.PodGroupList{} }},
			{"PartialObjectMetadataList/protobuf", metaProtobuf, metadataList, func() runtime.Object { return &metav1.PartialObjectMetadataList{} }},
			{"PartialObjectMetadataList/json", metaJSON, metadataList, func() runtime.Object { return &metav1.PartialObjectMetadataList{} }},
		}
		for _, c := range cases {
			b.Run(fmt.Sprintf("%s/%d", c.name, n), func(b *testing.B) {
				var buf bytes.Buffer
				b.ReportAllocs()
				for b.Loop() {
					buf.Reset()
					if err := c.serializer.Encode(c.object, &buf); err != nil {
						b.Fatalf("encode: %v", err)
					}
					if _, _, err := c.serializer.Decode(buf.Bytes(), nil, c.into()); err != nil {
						b.Fatalf("decode: %v", err)
					}
				}
				b.ReportMetric(float64(buf.Len()), "bytes/list")
			})
		}
	}
}

func serializerFor(b *testing.B, codecs runtime.NegotiatedSerializer, mediaType string) runtime.Serializer {
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		b.Fatalf("no %s serializer", mediaType)
	}
	return info.Serializer
}

// asMetadataList is what the server sends for
// Accept: ...;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1.
func asMetadataList(list *v1alpha1.PodGroupList) *metav1.PartialObjectMetadataList {
	out := &metav1.PartialObjectMetadataList{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"},
		ListMeta: list.ListMeta,
	}
	for i := range list.Items {
		out.Items = append(out.Items, metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
			ObjectMeta: list.Items[i].ObjectMeta,
		})
	}
	return out
}

// podGroupList is n running gangs as the controller leaves them: owned by
// a Job, with the pod-cleanup finalizer, the managed fields of their
// creator and of the controller's status writes, and an admitted status.
func podGroupList(n int) *v1alpha1.PodGroupList {
	created := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	list := &v1alpha1.PodGroupList{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "PodGroupList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "123456"},
	}
	for i := range n {
		name := fmt.Sprintf("train-%05d", i)
		list.Items = append(list.Items, v1alpha1.PodGroup{
			TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "PodGroup"},
			ObjectMeta: metav1.ObjectMeta{
				Name:              name,
				Namespace:         "team-a",
				UID:               types.UID(fmt.Sprintf("6f1c2a4e-0000-4000-8000-%012d", i)),
				ResourceVersion:   fmt.Sprint(100000 + i),
				Generation:        1,
				CreationTimestamp: created,
				Labels:            map[string]string{"app.kubernetes.io/name": "trainer", "batch.kubernetes.io/job-name": name},
				Finalizers:        []string{"scheduling.muster.dev/pod-cleanup"},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "batch/v1", Kind: "Job", Name: name,
					UID: types.UID(fmt.Sprintf("0b7d9e12-0000-4000-8000-%012d", i)), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
				}},
				ManagedFields: []metav1.ManagedFieldsEntry{
					{Manager: "job-controller", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "scheduling.muster.dev/v1alpha1", Time: &created, FieldsType: "FieldsV1",
						FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{".":{},"f:app.kubernetes.io/name":{},"f:batch.kubernetes.io/job-name":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"0b7d9e12\"}":{}}},"f:spec":{"f:priority":{},"f:schedulingPolicy":{"f:gang":{".":{},"f:minCount":{}}},"f:workloadRef":{".":{},"f:templateName":{},"f:workloadName":{}}}}`)}},
					{Manager: "muster-controller", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "scheduling.muster.dev/v1alpha1", Time: &created, FieldsType: "FieldsV1", Subresource: "status",
						FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:active":{},"f:admissionTime":{},"f:conditions":{".":{},"k:{\"type\":\"Admitted\"}":{},"k:{\"type\":\"Scheduled\"}":{}},"f:observedGeneration":{},"f:phase":{},"f:pods":{},"f:ready":{},"f:scheduled":{},"f:startTime":{}}}`)}},
				},
			},
			Spec: v1alpha1.PodGroupSpec{
				WorkloadRef:      &v1alpha1.WorkloadReference{WorkloadName: "trainer", TemplateName: "workers"},
				SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 8}},
				Priority:         ptr.To[int32](1000),
			},
			Status: v1alpha1.PodGroupStatus{
				Conditions: []metav1.Condition{
					{Type: v1alpha1.ConditionAdmitted, Status: metav1.ConditionTrue, ObservedGeneration: 1, LastTransitionTime: created, Reason: "MinCountReached", Message: "8 of 8 pods admitted together"},
					{Type: v1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, ObservedGeneration: 1, LastTransitionTime: created, Reason: "AllScheduled", Message: "8 pods bound"},
				},
				Phase:              v1alpha1.PodGroupRunning,
				Pods:               8,
				Active:             8,
				Scheduled:          8,
				Ready:              8,
				AdmissionTime:      &created,
				StartTime:          &created,
				ObservedGeneration: 1,
			},
		})
	}
	return list
}
