package instance

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
)

// DynamicReader reads owners of any kind with the dynamic client, finding
// each kind's resource through discovery, cached in memory and read again
// when a kind is not found (a CRD installed since).
type DynamicReader struct {
	client dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

var _ Reader = &DynamicReader{}

// NewDynamicReader returns a Reader on client, mapping kinds with disc.
func NewDynamicReader(client dynamic.Interface, disc discovery.DiscoveryInterface) *DynamicReader {
	return &DynamicReader{client: client, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}
}

// Get reads the namespaced object ref names.
func (d *DynamicReader) Get(ctx context.Context, namespace string, ref metav1.OwnerReference) (*unstructured.Unstructured, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("owner reference apiVersion %q: %w", ref.APIVersion, err)
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	mapping, err := d.mapper.RESTMapping(gk, gv.Version)
	if isNoMatch(err) {
		d.mapper.Reset()
		mapping, err = d.mapper.RESTMapping(gk, gv.Version)
	}
	if err != nil {
		return nil, err
	}
	return d.client.Resource(mapping.Resource).Namespace(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
}

// isNoMatch reports whether err says that the cluster serves no such kind.
func isNoMatch(err error) bool {
	var noKind *meta.NoKindMatchError
	var noResource *meta.NoResourceMatchError
	return errors.As(err, &noKind) || errors.As(err, &noResource)
}
