package server

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	musterscheme "github.com/muster-dev/muster/pkg/generated/clientset/versioned/scheme"
)

// eventScheme knows every kind the controller records events about: pods,
// from client-go's scheme, and Muster's PodGroups. The server's own scheme
// lacks core/v1, and a recorder built on it drops every event on a pod.
func eventScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(musterscheme.AddToScheme(s))
	return s
}

// newEventRecorder records the controller's events through kube-apiserver
// until the returned broadcaster is shut down.
func newEventRecorder(kube kubernetes.Interface, opts ...record.BroadcasterOption) (record.EventRecorder, record.EventBroadcaster) {
	broadcaster := record.NewBroadcaster(opts...)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	return broadcaster.NewRecorder(eventScheme(), corev1.EventSource{Component: scheduling.ControllerName}), broadcaster
}
