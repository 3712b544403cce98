package autoscaling

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// ProvisioningRequestResource is cluster-autoscaler's ProvisioningRequest
// API, served by its CRD where cluster-autoscaler is installed.
var ProvisioningRequestResource = schema.GroupVersionResource{Group: "autoscaling.x-k8s.io", Version: "v1", Resource: "provisioningrequests"}

// ProvisioningRequestKind is the kind of ProvisioningRequestResource.
const ProvisioningRequestKind = "ProvisioningRequest"

// The condition types cluster-autoscaler sets on a ProvisioningRequest.
const (
	ProvisioningRequestAccepted        = "Accepted"
	ProvisioningRequestProvisioned     = "Provisioned"
	ProvisioningRequestFailed          = "Failed"
	ProvisioningRequestBookingExpired  = "BookingExpired"
	ProvisioningRequestCapacityRevoked = "CapacityRevoked"
)

// MaxProvisioningRequestPodSets is the most pod sets a ProvisioningRequest
// may hold (its spec.podSets).
const MaxProvisioningRequestPodSets = 32

// maxRequestName bounds a ProvisioningRequest's name so that its
// PodTemplates' names, the request's name and "-<i>" for i below
// MaxProvisioningRequestPodSets, are DNS subdomains too.
const maxRequestName = validation.DNS1123SubdomainMaxLength - len("-31")

// provisioningRequester asks for room with one ProvisioningRequest per
// group, of the all-or-nothing class, whose pod sets reference one
// PodTemplate each. It watches only the requests and templates that carry
// CapacityRequestLabel.
type provisioningRequester struct {
	kube      kubernetes.Interface
	dyn       dynamic.Interface
	requests  cache.SharedIndexInformer
	templates cache.SharedIndexInformer
	factory   informers.SharedInformerFactory
}

// NewProvisioningRequests returns the Requester of ProvisioningRequests.
// Use it only where ProvisioningRequestsServed says the API is served.
func NewProvisioningRequests(kube kubernetes.Interface, dyn dynamic.Interface) Requester {
	labelled := func(o *metav1.ListOptions) { o.LabelSelector = scheduling.CapacityRequestLabel }
	indexers := cache.Indexers{groupIndex: groupKeys}
	requests := dynamicinformer.NewFilteredDynamicInformer(dyn, ProvisioningRequestResource, metav1.NamespaceAll, 0, indexers, labelled).Informer()
	// Cannot fail before the informer starts.
	_ = requests.SetTransform(trimRequest)

	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0,
		informers.WithTweakListOptions(labelled), informers.WithTransform(trimTemplate))
	templates := factory.Core().V1().PodTemplates().Informer()
	_ = templates.AddIndexers(indexers)
	return &provisioningRequester{kube: kube, dyn: dyn, requests: requests, templates: templates, factory: factory}
}

func (r *provisioningRequester) Kind() string { return KindProvisioningRequest }

// Start runs both informers; only a request's changes are news to the
// controller, since its templates never change and State does not read
// them.
func (r *provisioningRequester) Start(ctx context.Context, changed func(key scheduling.GroupKey)) func() bool {
	notify := func(obj interface{}) {
		if key, ok := requestGroup(obj); ok {
			changed(key)
		}
	}
	reg, _ := r.requests.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(_, obj interface{}) { notify(obj) },
		DeleteFunc: notify,
	})
	go r.requests.RunWithContext(ctx)
	r.factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		r.factory.Shutdown()
	}()
	return func() bool { return r.requests.HasSynced() && reg.HasSynced() && r.templates.HasSynced() }
}

// requestName names d's ProvisioningRequest: the group's name and the
// demand's hash, so that a create retried after a crash finds the request
// it made, and a new demand makes a new request (the spec is immutable).
// A name too long loses the end of the group's name, never the hash.
func requestName(d Demand) string {
	suffix := "-" + d.Hash
	prefix := d.Name
	if len(prefix)+len(suffix) > maxRequestName {
		prefix = strings.TrimRight(prefix[:maxRequestName-len(suffix)], "-.")
	}
	return prefix + suffix
}

// templateName names the PodTemplate of the i-th pod set of request.
func templateName(request string, i int) string {
	return fmt.Sprintf("%s-%d", request, i)
}

// Check refuses a demand of more pod shapes than one ProvisioningRequest
// holds.
func (r *provisioningRequester) Check(d Demand) error {
	if n := len(d.PodSets); n == 0 || n > MaxProvisioningRequestPodSets {
		return fmt.Errorf("its pods have %d distinct shapes, and a ProvisioningRequest holds 1 to %d (spec.podSets)", n, MaxProvisioningRequestPodSets)
	}
	return nil
}

func (r *provisioningRequester) Request(ctx context.Context, d Demand) error {
	if err := r.Check(d); err != nil {
		return fmt.Errorf("group %s: %w", d.Key(), err)
	}
	name := requestName(d)
	// Made for other pods or an earlier group of the same name: it asks for
	// the wrong room.
	var staleRequests []*unstructured.Unstructured
	haveRequest := false
	for _, pr := range r.requestsOf(d.Key()) {
		switch {
		case pr.GetName() != name || ownerUID(pr) != d.UID:
			staleRequests = append(staleRequests, pr)
		case pr.GetDeletionTimestamp() == nil:
			haveRequest = true
		}
	}
	want := map[string]int{}
	for i := range d.PodSets {
		want[templateName(name, i)] = i
	}
	var staleTemplates []*corev1.PodTemplate
	haveTemplate := map[string]bool{}
	for _, t := range r.templatesOf(d.Key()) {
		if _, ok := want[t.Name]; !ok || ownerUID(t) != d.UID {
			staleTemplates = append(staleTemplates, t)
		} else if t.DeletionTimestamp == nil {
			haveTemplate[t.Name] = true
		}
	}
	// The stale request goes before its templates, so that the autoscaler
	// never reads a request whose templates are gone.
	if err := r.deleteRequests(ctx, staleRequests); err != nil {
		return err
	}
	if err := r.deleteTemplates(ctx, staleTemplates); err != nil {
		return err
	}
	// The templates go before the request, for the same reason.
	for i, set := range d.PodSets {
		t := podTemplate(d, templateName(name, i), set.Template)
		if haveTemplate[t.Name] {
			continue
		}
		_, err := r.kube.CoreV1().PodTemplates(d.Namespace).Create(ctx, t, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating PodTemplate %s/%s: %w", d.Namespace, t.Name, err)
		}
	}
	if haveRequest {
		return nil
	}
	_, err := r.dyn.Resource(ProvisioningRequestResource).Namespace(d.Namespace).Create(ctx, provisioningRequest(d, name), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ProvisioningRequest %s/%s: %w", d.Namespace, name, err)
	}
	return nil
}

// requestMeta is the metadata of what d's request creates: its group's
// label, the demand's hash, and the group as owner, so that garbage
// collection removes it with the group.
func requestMeta(d Demand, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       d.Namespace,
		Labels:          map[string]string{scheduling.CapacityRequestLabel: d.Name},
		Annotations:     map[string]string{scheduling.CapacityRequestHashAnnotation: d.Hash},
		OwnerReferences: []metav1.OwnerReference{OwnerReference(d)},
	}
}

// podTemplate is the PodTemplate of one of d's pod sets.
func podTemplate(d Demand, name string, template corev1.PodTemplateSpec) *corev1.PodTemplate {
	return &corev1.PodTemplate{ObjectMeta: requestMeta(d, name), Template: *template.DeepCopy()}
}

// provisioningRequest is d's ProvisioningRequest, of the all-or-nothing
// class, with one pod set per PodTemplate.
func provisioningRequest(d Demand, name string) *unstructured.Unstructured {
	sets := make([]interface{}, len(d.PodSets))
	for i, s := range d.PodSets {
		sets[i] = map[string]interface{}{
			"podTemplateRef": map[string]interface{}{"name": templateName(name, i)},
			"count":          int64(s.Count),
		}
	}
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"spec": map[string]interface{}{
			"provisioningClassName": scheduling.ProvisioningRequestClass,
			"podSets":               sets,
		},
	}}
	u.SetGroupVersionKind(ProvisioningRequestResource.GroupVersion().WithKind(ProvisioningRequestKind))
	m := requestMeta(d, name)
	u.SetName(m.Name)
	u.SetNamespace(m.Namespace)
	u.SetLabels(m.Labels)
	u.SetAnnotations(m.Annotations)
	u.SetOwnerReferences(m.OwnerReferences)
	return u
}

// Withdraw deletes the group's requests, then their templates.
func (r *provisioningRequester) Withdraw(ctx context.Context, key scheduling.GroupKey) error {
	return errors.Join(
		r.deleteRequests(ctx, r.requestsOf(key)),
		r.deleteTemplates(ctx, r.templatesOf(key)))
}

// deleteRequests deletes ProvisioningRequests, each with a UID
// precondition; one already gone or replaced is no error.
func (r *provisioningRequester) deleteRequests(ctx context.Context, prs []*unstructured.Unstructured) error {
	var errs []error
	for _, pr := range prs {
		uid := pr.GetUID()
		err := r.dyn.Resource(ProvisioningRequestResource).Namespace(pr.GetNamespace()).Delete(ctx, pr.GetName(), deleteOptions(uid))
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting ProvisioningRequest %s/%s: %w", pr.GetNamespace(), pr.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// deleteTemplates deletes PodTemplates as deleteRequests does requests.
func (r *provisioningRequester) deleteTemplates(ctx context.Context, templates []*corev1.PodTemplate) error {
	var errs []error
	for _, t := range templates {
		err := r.kube.CoreV1().PodTemplates(t.Namespace).Delete(ctx, t.Name, deleteOptions(t.UID))
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting PodTemplate %s/%s: %w", t.Namespace, t.Name, err))
		}
	}
	return errors.Join(errs...)
}

func deleteOptions(uid types.UID) metav1.DeleteOptions {
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
}

// State reads the group's newest request that is not being deleted: while
// a request is replaced, the new one says what is asked for.
func (r *provisioningRequester) State(key scheduling.GroupKey) (State, bool) {
	var pr *unstructured.Unstructured
	for _, o := range r.requestsOf(key) {
		if o.GetDeletionTimestamp() != nil {
			continue
		}
		if pr == nil || newer(o, pr) {
			pr = o
		}
	}
	if pr == nil {
		return State{}, false
	}
	name := pr.GetNamespace() + "/" + pr.GetName()
	st := State{
		Kind:  KindProvisioningRequest,
		Name:  ProvisioningRequestKind + " " + name,
		Hash:  pr.GetAnnotations()[scheduling.CapacityRequestHashAnnotation],
		Since: pr.GetCreationTimestamp().Time,
	}
	sets, _, _ := unstructured.NestedSlice(pr.Object, "spec", "podSets")
	for _, s := range sets {
		if m, ok := s.(map[string]interface{}); ok {
			count, _, _ := unstructured.NestedInt64(m, "count")
			st.Requested += int32(count)
		}
	}
	conds := conditions(pr)
	if c, ok := conds[ProvisioningRequestProvisioned]; ok && c.Status == metav1.ConditionTrue {
		st.Provisioned = st.Requested
	}
	st.Failed = failure(name, conds)
	return st, true
}

// newer reports whether a was created after b (by name on a tie, so that
// the choice does not depend on the informer's order).
func newer(a, b *unstructured.Unstructured) bool {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	if !ta.Equal(&tb) {
		return tb.Before(&ta)
	}
	return a.GetName() > b.GetName()
}

// failure is why the request named name cannot give its group room, from
// its conditions, or "" while it may: the autoscaler gave up, or the room
// it provisioned is no longer held for the group.
func failure(name string, conds map[string]metav1.Condition) string {
	explain := func(what string, c metav1.Condition) string {
		if c.Message != "" {
			return what + ": " + c.Message
		}
		if c.Reason != "" {
			return what + " (" + c.Reason + ")"
		}
		return what
	}
	for _, f := range []struct{ condition, what string }{
		{ProvisioningRequestFailed, "ProvisioningRequest " + name + " failed"},
		{ProvisioningRequestCapacityRevoked, "the capacity provisioned for ProvisioningRequest " + name + " was revoked"},
		{ProvisioningRequestBookingExpired, "the capacity booked for ProvisioningRequest " + name + " expired before the gang was admitted"},
	} {
		if c, ok := conds[f.condition]; ok && c.Status == metav1.ConditionTrue {
			return explain(f.what, c)
		}
	}
	return ""
}

// conditions are a request's status.conditions by type.
func conditions(pr *unstructured.Unstructured) map[string]metav1.Condition {
	list, _, _ := unstructured.NestedSlice(pr.Object, "status", "conditions")
	out := make(map[string]metav1.Condition, len(list))
	for _, item := range list {
		m, ok := item.(map[string]interface{})
		if !ok {
			continue
		}
		str := func(field string) string { s, _ := m[field].(string); return s }
		out[str("type")] = metav1.Condition{
			Type:    str("type"),
			Status:  metav1.ConditionStatus(str("status")),
			Reason:  str("reason"),
			Message: str("message"),
		}
	}
	return out
}

func (r *provisioningRequester) Keys() []scheduling.GroupKey {
	return indexedKeys(r.requests.GetIndexer())
}

// requestsOf are the ProvisioningRequests of group key, from the informer.
func (r *provisioningRequester) requestsOf(key scheduling.GroupKey) []*unstructured.Unstructured {
	return indexedOf[*unstructured.Unstructured](r.requests.GetIndexer(), key)
}

// templatesOf are the PodTemplates of group key, from the informer.
func (r *provisioningRequester) templatesOf(key scheduling.GroupKey) []*corev1.PodTemplate {
	return indexedOf[*corev1.PodTemplate](r.templates.GetIndexer(), key)
}

// groupKeys indexes what a request created by its group's key: its
// namespace and the value of CapacityRequestLabel.
func groupKeys(obj interface{}) ([]string, error) {
	m, err := metaOf(obj)
	if err != nil {
		return nil, err
	}
	if g := m.GetLabels()[scheduling.CapacityRequestLabel]; g != "" {
		return []string{scheduling.NewGroupKey(m.GetNamespace(), g).String()}, nil
	}
	return nil, nil
}

// requestGroup is the key of the group whose request obj is part of.
func requestGroup(obj interface{}) (scheduling.GroupKey, bool) {
	m, err := metaOf(obj)
	if err != nil {
		return scheduling.GroupKey{}, false
	}
	g := m.GetLabels()[scheduling.CapacityRequestLabel]
	return scheduling.NewGroupKey(m.GetNamespace(), g), g != ""
}

// indexedKeys lists, sorted, the groups that have something in indexer's
// groupIndex. The index holds keys as strings: GroupKey.String.
func indexedKeys(indexer cache.Indexer) []scheduling.GroupKey {
	values := indexer.ListIndexFuncValues(groupIndex)
	sort.Strings(values)
	keys := make([]scheduling.GroupKey, 0, len(values))
	for _, v := range values {
		if key, err := scheduling.ParseGroupKey(v); err == nil {
			keys = append(keys, key)
		}
	}
	return keys
}

// indexedOf are the objects of type T that indexer's groupIndex holds for
// group key.
func indexedOf[T any](indexer cache.Indexer, key scheduling.GroupKey) []T {
	objs, err := indexer.ByIndex(groupIndex, key.String())
	if err != nil {
		return nil
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// trimRequest drops a ProvisioningRequest's managed fields, its largest
// part that nothing here reads.
func trimRequest(obj interface{}) (interface{}, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.SetManagedFields(nil)
	}
	return obj, nil
}

// trimTemplate keeps of a PodTemplate what Request and Withdraw read: its
// name, label, hash, owner and deletion; never its pod template.
func trimTemplate(obj interface{}) (interface{}, error) {
	t, ok := obj.(*corev1.PodTemplate)
	if !ok {
		return obj, nil
	}
	var ann map[string]string
	if h, ok := t.Annotations[scheduling.CapacityRequestHashAnnotation]; ok {
		ann = map[string]string{scheduling.CapacityRequestHashAnnotation: h}
	}
	return &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{
		Name: t.Name, Namespace: t.Namespace, UID: t.UID, ResourceVersion: t.ResourceVersion,
		Labels:            map[string]string{scheduling.CapacityRequestLabel: t.Labels[scheduling.CapacityRequestLabel]},
		Annotations:       ann,
		OwnerReferences:   t.OwnerReferences,
		CreationTimestamp: t.CreationTimestamp,
		DeletionTimestamp: t.DeletionTimestamp,
	}}, nil
}

// ProvisioningRequestsServed reports whether the cluster serves
// autoscaling.x-k8s.io/v1 provisioningrequests, which --autoscaling=auto
// prefers to capacity-request pods.
func ProvisioningRequestsServed(disc discovery.DiscoveryInterface) (bool, error) {
	return served(disc, ProvisioningRequestResource)
}

// KarpenterNodePools is Karpenter's NodePool API: where it is served, an
// autoscaler provisions for unschedulable pods, so capacity-request pods
// can get nodes.
var KarpenterNodePools = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}

// KarpenterServed reports whether the cluster serves KarpenterNodePools.
func KarpenterServed(disc discovery.DiscoveryInterface) (bool, error) {
	return served(disc, KarpenterNodePools)
}

// served reports whether the cluster serves the resource r.
func served(disc discovery.DiscoveryInterface, r schema.GroupVersionResource) (bool, error) {
	gv := r.GroupVersion().String()
	list, err := disc.ServerResourcesForGroupVersion(gv)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", gv, err)
	}
	for _, res := range list.APIResources {
		if res.Name == r.Resource {
			return true, nil
		}
	}
	return false, nil
}
