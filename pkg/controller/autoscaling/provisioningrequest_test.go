package autoscaling

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	discoveryfake "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// prFixture is a started ProvisioningRequest Requester on fake clients.
type prFixture struct {
	r    Requester
	kube *kubefake.Clientset
	dyn  *dynamicfake.FakeDynamicClient
}

func startPRFixture(t *testing.T, objs ...runtime.Object) *prFixture {
	t.Helper()
	var typed, dynamic []runtime.Object
	for _, o := range objs {
		if _, ok := o.(*unstructured.Unstructured); ok {
			dynamic = append(dynamic, o)
		} else {
			typed = append(typed, o)
		}
	}
	f := &prFixture{
		kube: kubefake.NewClientset(typed...),
		dyn: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{ProvisioningRequestResource: ProvisioningRequestKind + "List"}, dynamic...),
	}
	f.r = NewProvisioningRequests(f.kube, f.dyn)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	synced := f.r.Start(ctx, func(scheduling.GroupKey) {})
	poll(t, synced)
	f.kube.ClearActions()
	f.dyn.ClearActions()
	return f
}

// poll waits until cond holds.
func poll(t *testing.T, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatal("condition never held")
	}
}

// requests are the ProvisioningRequests in ns, from the API.
func (f *prFixture) requests(t *testing.T, ns string) []*unstructured.Unstructured {
	t.Helper()
	list, err := f.dyn.Resource(ProvisioningRequestResource).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out
}

func (f *prFixture) templates(t *testing.T, ns string) []corev1.PodTemplate {
	t.Helper()
	list, err := f.kube.CoreV1().PodTemplates(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// caughtUp waits until the Requester's informers hold what the API does.
func (f *prFixture) caughtUp(t *testing.T, ns string) {
	t.Helper()
	r := f.r.(*provisioningRequester)
	poll(t, func() bool {
		var cached, stored []string
		for _, o := range append(r.requests.GetStore().List(), r.templates.GetStore().List()...) {
			m, _ := metaOf(o)
			cached = append(cached, m.GetName()+"/"+string(m.GetUID()))
		}
		for _, pr := range f.requests(t, ns) {
			stored = append(stored, pr.GetName()+"/"+string(pr.GetUID()))
		}
		for _, tmpl := range f.templates(t, ns) {
			stored = append(stored, tmpl.Name+"/"+string(tmpl.UID))
		}
		sort.Strings(cached)
		sort.Strings(stored)
		return cmp.Equal(cached, stored, cmpopts.EquateEmpty())
	})
}

// creates counts the create calls the Requester made.
func (f *prFixture) creates() int {
	n := 0
	for _, actions := range [][]clienttesting.Action{f.kube.Actions(), f.dyn.Actions()} {
		for _, a := range actions {
			if a.GetVerb() == "create" {
				n++
			}
		}
	}
	return n
}

func names[T interface{ GetName() string }](objs []T) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.GetName()
	}
	sort.Strings(out)
	return out
}

func templateNames(ts []corev1.PodTemplate) []string {
	out := make([]string, len(ts))
	for i := range ts {
		out[i] = ts[i].Name
	}
	sort.Strings(out)
	return out
}

func testDemand(hash string, uid types.UID, counts ...int32) Demand {
	d := Demand{Namespace: "ns", Name: "g", UID: uid, Hash: hash}
	for i, c := range counts {
		d.PodSets = append(d.PodSets, PodSet{Count: c, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{scheduling.CapacityRequestLabel: "g", "set": string(rune('a' + i))}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: scheduling.CapacityRequestContainer, Image: "pause",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}},
			}}},
		}})
	}
	return d
}

// existing is what a Request for d made, as the API holds it.
func existing(d Demand) []runtime.Object {
	name := requestName(d)
	pr := provisioningRequest(d, name)
	pr.SetUID(types.UID("pr-" + name))
	objs := []runtime.Object{pr}
	for i, s := range d.PodSets {
		t := podTemplate(d, templateName(name, i), s.Template)
		t.UID = types.UID("t-" + t.Name)
		objs = append(objs, t)
	}
	return objs
}

func TestProvisioningRequestRequest(t *testing.T) {
	d := testDemand("h1", "uid-1", 3, 1)
	tests := []struct {
		name          string
		existing      []runtime.Object
		demand        Demand
		wantRequests  []string
		wantTemplates []string
		wantCreates   int
		wantErr       string
	}{
		{name: "creates one template per pod set, then the request",
			demand: d, wantRequests: []string{"g-h1"}, wantTemplates: []string{"g-h1-0", "g-h1-1"}, wantCreates: 3},
		{name: "the request made already is kept: nothing is created",
			existing: existing(d), demand: d, wantRequests: []string{"g-h1"}, wantTemplates: []string{"g-h1-0", "g-h1-1"}},
		{name: "a missing template is created again",
			existing: existing(d)[:2], demand: d, wantRequests: []string{"g-h1"}, wantTemplates: []string{"g-h1-0", "g-h1-1"}, wantCreates: 1},
		{name: "a request for another hash is replaced with its templates",
			existing: existing(testDemand("h0", "uid-1", 1, 1, 1)), demand: d,
			wantRequests: []string{"g-h1"}, wantTemplates: []string{"g-h1-0", "g-h1-1"}, wantCreates: 3},
		{name: "a request of an earlier group of the same name is replaced",
			existing: existing(testDemand("h1", "uid-0", 3, 1)), demand: d,
			wantRequests: []string{"g-h1"}, wantTemplates: []string{"g-h1-0", "g-h1-1"}, wantCreates: 3},
		{name: "another group's request is left alone",
			existing: existing(Demand{Namespace: "ns", Name: "other", UID: "uid-9", Hash: "h9", PodSets: d.PodSets[:1]}), demand: d,
			wantRequests: []string{"g-h1", "other-h9"}, wantTemplates: []string{"g-h1-0", "g-h1-1", "other-h9-0"}, wantCreates: 3},
		{name: "no pod set is an error",
			demand: testDemand("h1", "uid-1"), wantErr: "have 0 distinct shapes"},
		{name: "more pod sets than a request holds is an error",
			demand: testDemand("h1", "uid-1", make([]int32, MaxProvisioningRequestPodSets+1)...), wantErr: "have 33 distinct shapes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := startPRFixture(t, tc.existing...)
			err := f.r.Request(context.Background(), tc.demand)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantRequests, names(f.requests(t, "ns"))); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantTemplates, templateNames(f.templates(t, "ns"))); diff != "" {
				t.Errorf("templates (-want +got):\n%s", diff)
			}
			if got := f.creates(); got != tc.wantCreates {
				t.Errorf("made %d creates, want %d", got, tc.wantCreates)
			}
			// Once the informers have seen the result, asking again is a no-op.
			f.caughtUp(t, "ns")
			f.kube.ClearActions()
			f.dyn.ClearActions()
			if err := f.r.Request(context.Background(), tc.demand); err != nil {
				t.Fatal(err)
			}
			if got := len(f.kube.Actions()) + len(f.dyn.Actions()); got != 0 {
				t.Errorf("a repeated request made %d calls, want none: %v", got, append(f.kube.Actions(), f.dyn.Actions()...))
			}
		})
	}
}

// TestProvisioningRequestFields: the request and its templates carry the
// group's label, the hash and the group as owner; the request names its
// class and one template per pod set with its count.
func TestProvisioningRequestFields(t *testing.T) {
	d := testDemand("h1", "uid-1", 3, 1)
	f := startPRFixture(t)
	var order []string
	record := func(a clienttesting.Action) (bool, runtime.Object, error) {
		order = append(order, a.GetResource().Resource)
		return false, nil, nil
	}
	f.kube.PrependReactor("create", "*", record)
	f.dyn.PrependReactor("create", "*", record)
	if err := f.r.Request(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	// Templates first: the autoscaler never reads a request whose templates
	// are missing.
	if diff := cmp.Diff([]string{"podtemplates", "podtemplates", "provisioningrequests"}, order); diff != "" {
		t.Errorf("create order (-want +got):\n%s", diff)
	}
	wantMeta := func(what string, m metav1.Object) {
		if got := m.GetLabels()[scheduling.CapacityRequestLabel]; got != "g" {
			t.Errorf("%s label %q, want g", what, got)
		}
		if got := m.GetAnnotations()[scheduling.CapacityRequestHashAnnotation]; got != "h1" {
			t.Errorf("%s hash %q, want h1", what, got)
		}
		if diff := cmp.Diff([]metav1.OwnerReference{OwnerReference(d)}, m.GetOwnerReferences()); diff != "" {
			t.Errorf("%s owners (-want +got):\n%s", what, diff)
		}
	}
	prs := f.requests(t, "ns")
	if len(prs) != 1 {
		t.Fatalf("got %d requests, want 1", len(prs))
	}
	wantMeta("request", prs[0])
	if got := prs[0].GetAPIVersion() + " " + prs[0].GetKind(); got != "autoscaling.x-k8s.io/v1 ProvisioningRequest" {
		t.Errorf("request is a %s", got)
	}
	wantSpec := map[string]interface{}{
		"provisioningClassName": scheduling.ProvisioningRequestClass,
		"podSets": []interface{}{
			map[string]interface{}{"podTemplateRef": map[string]interface{}{"name": "g-h1-0"}, "count": int64(3)},
			map[string]interface{}{"podTemplateRef": map[string]interface{}{"name": "g-h1-1"}, "count": int64(1)},
		},
	}
	if diff := cmp.Diff(wantSpec, prs[0].Object["spec"]); diff != "" {
		t.Errorf("request spec (-want +got):\n%s", diff)
	}
	for i, tmpl := range f.templates(t, "ns") {
		wantMeta("template "+tmpl.Name, &tmpl)
		if diff := cmp.Diff(d.PodSets[i].Template, tmpl.Template); diff != "" {
			t.Errorf("template %s (-want +got):\n%s", tmpl.Name, diff)
		}
	}
}

func TestProvisioningRequestWithdraw(t *testing.T) {
	d := testDemand("h1", "uid-1", 3, 1)
	other := Demand{Namespace: "ns", Name: "other", UID: "uid-9", Hash: "h9", PodSets: d.PodSets[:1]}
	tests := []struct {
		name          string
		existing      []runtime.Object
		wantRequests  []string
		wantTemplates []string
	}{
		{name: "the request and its templates are deleted, another group's kept",
			existing:     append(existing(d), existing(other)...),
			wantRequests: []string{"other-h9"}, wantTemplates: []string{"other-h9-0"}},
		{name: "templates left without their request are deleted",
			existing: existing(d)[1:], wantRequests: []string{}, wantTemplates: []string{}},
		{name: "a group with no request is no error",
			wantRequests: []string{}, wantTemplates: []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := startPRFixture(t, tc.existing...)
			if err := f.r.Withdraw(context.Background(), scheduling.NewGroupKey("ns", "g")); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantRequests, names(f.requests(t, "ns"))); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantTemplates, templateNames(f.templates(t, "ns"))); diff != "" {
				t.Errorf("templates (-want +got):\n%s", diff)
			}
			f.caughtUp(t, "ns")
			if _, ok := f.r.State(scheduling.NewGroupKey("ns", "g")); ok {
				t.Error("State reports a request after Withdraw")
			}
		})
	}
}

func TestProvisioningRequestState(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	d := testDemand("h1", "uid-1", 3, 1)
	withConditions := func(conds ...metav1.Condition) []runtime.Object {
		objs := existing(d)
		pr := objs[0].(*unstructured.Unstructured)
		pr.SetCreationTimestamp(created)
		list := make([]interface{}, len(conds))
		for i, c := range conds {
			list[i] = map[string]interface{}{"type": c.Type, "status": string(c.Status), "reason": c.Reason, "message": c.Message}
		}
		if err := unstructured.SetNestedSlice(pr.Object, list, "status", "conditions"); err != nil {
			t.Fatal(err)
		}
		return objs
	}
	cond := func(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg}
	}
	base := State{Kind: KindProvisioningRequest, Name: "ProvisioningRequest ns/g-h1", Hash: "h1", Since: created.Time, Requested: 4}
	with := func(mod func(*State)) State { s := base; mod(&s); return s }
	tests := []struct {
		name     string
		existing []runtime.Object
		want     State
		wantOK   bool
	}{
		{name: "no request, no state"},
		{name: "without conditions, asked and not provisioned",
			existing: withConditions(), want: base, wantOK: true},
		{name: "accepted is not provisioned",
			existing: withConditions(cond(ProvisioningRequestAccepted, metav1.ConditionTrue, "Accepted", "")), want: base, wantOK: true},
		{name: "provisioned=false is not provisioned",
			existing: withConditions(cond(ProvisioningRequestProvisioned, metav1.ConditionFalse, "Pending", "")), want: base, wantOK: true},
		{name: "provisioned=true provisions every pod",
			existing: withConditions(cond(ProvisioningRequestProvisioned, metav1.ConditionTrue, "Provisioned", "")),
			want:     with(func(s *State) { s.Provisioned = 4 }), wantOK: true},
		{name: "failed=true fails with its message",
			existing: withConditions(cond(ProvisioningRequestFailed, metav1.ConditionTrue, "NoScaleUp", "no node group fits")),
			want:     with(func(s *State) { s.Failed = "ProvisioningRequest ns/g-h1 failed: no node group fits" }), wantOK: true},
		{name: "failed=true without a message fails with its reason",
			existing: withConditions(cond(ProvisioningRequestFailed, metav1.ConditionTrue, "NoScaleUp", "")),
			want:     with(func(s *State) { s.Failed = "ProvisioningRequest ns/g-h1 failed (NoScaleUp)" }), wantOK: true},
		{name: "failed=false is no failure",
			existing: withConditions(cond(ProvisioningRequestFailed, metav1.ConditionFalse, "", "")), want: base, wantOK: true},
		{name: "an expired booking fails",
			existing: withConditions(
				cond(ProvisioningRequestProvisioned, metav1.ConditionTrue, "Provisioned", ""),
				cond(ProvisioningRequestBookingExpired, metav1.ConditionTrue, "BookingExpired", "")),
			want: with(func(s *State) {
				s.Provisioned = 4
				s.Failed = "the capacity booked for ProvisioningRequest ns/g-h1 expired before the gang was admitted (BookingExpired)"
			}), wantOK: true},
		{name: "revoked capacity fails",
			existing: withConditions(cond(ProvisioningRequestCapacityRevoked, metav1.ConditionTrue, "Revoked", "node group deleted")),
			want: with(func(s *State) {
				s.Failed = "the capacity provisioned for ProvisioningRequest ns/g-h1 was revoked: node group deleted"
			}), wantOK: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := startPRFixture(t, tc.existing...)
			got, ok := f.r.State(scheduling.NewGroupKey("ns", "g"))
			if ok != tc.wantOK {
				t.Fatalf("State ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("State (-want +got):\n%s", diff)
			}
			wantKeys := []scheduling.GroupKey{}
			if tc.wantOK {
				wantKeys = []scheduling.GroupKey{scheduling.NewGroupKey("ns", "g")}
			}
			if diff := cmp.Diff(wantKeys, f.r.Keys(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Keys (-want +got):\n%s", diff)
			}
		})
	}
}

// TestProvisioningRequestStateNewest: while a request is replaced, the
// newest one says what is asked for.
func TestProvisioningRequestStateNewest(t *testing.T) {
	old := existing(testDemand("h0", "uid-1", 1))
	old[0].(*unstructured.Unstructured).SetCreationTimestamp(metav1.NewTime(time.Unix(100, 0)))
	cur := existing(testDemand("h1", "uid-1", 2))
	cur[0].(*unstructured.Unstructured).SetCreationTimestamp(metav1.NewTime(time.Unix(200, 0)))
	f := startPRFixture(t, append(old, cur...)...)
	got, ok := f.r.State(scheduling.NewGroupKey("ns", "g"))
	if !ok || got.Hash != "h1" || got.Requested != 2 {
		t.Errorf("State = %+v, %v; want the request for h1 of 2 pods", got, ok)
	}
}

func TestRequestName(t *testing.T) {
	long := strings.Repeat("a", 238) + "." + strings.Repeat("b", 30)
	tests := []struct {
		name, group, want string
	}{
		{"group and hash", "train", "train-0123456789"},
		{"a long name loses its end, never the hash, nor ends a label with a dot",
			long, strings.Repeat("a", 238) + "-0123456789"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := requestName(Demand{Name: tc.group, Hash: "0123456789"})
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if n := len(templateName(got, MaxProvisioningRequestPodSets-1)); n > 253 {
				t.Errorf("a template name has %d characters, more than 253", n)
			}
		})
	}
}

func TestProvisioningRequestsServed(t *testing.T) {
	gv := ProvisioningRequestResource.GroupVersion().String()
	tests := []struct {
		name      string
		resources []*metav1.APIResourceList
		want      bool
	}{
		{"served", []*metav1.APIResourceList{{GroupVersion: gv, APIResources: []metav1.APIResource{
			{Name: "provisioningrequests", Namespaced: true, Kind: ProvisioningRequestKind},
			{Name: "provisioningrequests/status", Namespaced: true, Kind: ProvisioningRequestKind},
		}}}, true},
		{"group version not served", []*metav1.APIResourceList{{GroupVersion: "autoscaling.x-k8s.io/v1beta1", APIResources: []metav1.APIResource{
			{Name: "provisioningrequests", Namespaced: true, Kind: ProvisioningRequestKind},
		}}}, false},
		{"group version without the resource", []*metav1.APIResourceList{{GroupVersion: gv, APIResources: []metav1.APIResource{
			{Name: "provisioningrequestconfigs", Kind: "ProvisioningRequestConfig"},
		}}}, false},
		{"nothing served", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			disc := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{Resources: tc.resources}}
			got, err := ProvisioningRequestsServed(disc)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("served = %v, want %v", got, tc.want)
			}
		})
	}
}
