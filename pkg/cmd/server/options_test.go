package server

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/muster-dev/muster/pkg/manifests"
)

// TestStandaloneBindsLoopbackOnly checks that standalone mode defaults to
// 127.0.0.1 and refuses any address that is not loopback.
func TestStandaloneBindsLoopbackOnly(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
		wantIP  string
	}{
		{name: "default is 127.0.0.1", args: []string{"--standalone"}, wantIP: "127.0.0.1"},
		{name: "explicit loopback is accepted", args: []string{"--standalone", "--bind-address=127.0.0.2"}, wantIP: "127.0.0.2"},
		{name: "IPv6 loopback is accepted", args: []string{"--standalone", "--bind-address=::1"}, wantIP: "::1"},
		{name: "all interfaces are refused", args: []string{"--standalone", "--bind-address=0.0.0.0"}, wantErr: "binds to loopback only: --bind-address=0.0.0.0"},
		{name: "a routable address is refused", args: []string{"--standalone", "--bind-address=10.1.2.3"}, wantErr: "binds to loopback only: --bind-address=10.1.2.3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			args := append(tc.args, "--etcd-servers=http://127.0.0.1:2379", "--data-dir="+t.TempDir())
			if err := fs.Parse(args); err != nil {
				t.Fatalf("parsing flags: %v", err)
			}
			if err := o.Complete(fs); err != nil {
				t.Fatalf("complete: %v", err)
			}
			err := o.Validate()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("validate = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("validate: %v", err)
			}
			if got := o.RecommendedOptions.SecureServing.BindAddress.String(); got != tc.wantIP {
				t.Errorf("bind address = %s, want %s", got, tc.wantIP)
			}
		})
	}
}

// TestStandaloneDropsDelegation checks that standalone mode asks the cluster
// for nothing: no delegated authentication or authorization, no core client.
func TestStandaloneDropsDelegation(t *testing.T) {
	o := NewOptions()
	o.Standalone = true
	if err := o.Complete(nil); err != nil {
		t.Fatal(err)
	}
	ro := o.RecommendedOptions
	if ro.Authentication != nil || ro.Authorization != nil || ro.CoreAPI != nil || ro.Admission != nil || ro.Features.EnablePriorityAndFairness {
		t.Errorf("standalone kept cluster dependencies: authn=%v authz=%v core=%v admission=%v apf=%v",
			ro.Authentication != nil, ro.Authorization != nil, ro.CoreAPI != nil, ro.Admission != nil, ro.Features.EnablePriorityAndFairness)
	}
}

// TestNormalModeDelegates checks that without --standalone the server keeps
// delegated authentication and authorization and the admission chain.
func TestNormalModeDelegates(t *testing.T) {
	o := NewOptions()
	if err := o.Complete(nil); err != nil {
		t.Fatal(err)
	}
	ro := o.RecommendedOptions
	if ro.Authentication == nil || ro.Authorization == nil || ro.CoreAPI == nil || ro.Admission == nil {
		t.Fatalf("normal mode lost delegation: authn=%v authz=%v core=%v admission=%v",
			ro.Authentication != nil, ro.Authorization != nil, ro.CoreAPI != nil, ro.Admission != nil)
	}
	if len(ro.Etcd.StorageConfig.Transport.ServerList) != 1 || !strings.HasPrefix(ro.Etcd.StorageConfig.Transport.ServerList[0], "http://127.0.0.1:") {
		t.Errorf("with no --etcd-servers the embedded etcd URL = %v, want a loopback URL", ro.Etcd.StorageConfig.Transport.ServerList)
	}
}

// TestNamespaceSelectorIsTheWebhooks checks that by default the controller
// manages exactly the namespaces that the webhooks and the policy binding
// select, wherever the server runs (issue 9 item 4: one source), and keeps
// its Lease in its own namespace.
func TestNamespaceSelectorIsTheWebhooks(t *testing.T) {
	webhook, err := metav1.LabelSelectorAsSelector(manifests.DefaultNamespaceSelector())
	if err != nil {
		t.Fatal(err)
	}
	binding, err := metav1.LabelSelectorAsSelector(manifests.PolicyBinding(manifests.Config{}, manifests.LabelsPolicyName).Spec.MatchResources.NamespaceSelector)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ podNamespace, wantLeaseNS string }{
		{"", "muster-system"},
		{"batch-infra", "batch-infra"},
	}
	for _, tc := range tests {
		t.Setenv("POD_NAMESPACE", tc.podNamespace)
		o := NewControllerOptions()
		controller, err := labels.Parse(o.NamespaceSelector)
		if err != nil {
			t.Fatal(err)
		}
		if controller.String() != webhook.String() || controller.String() != binding.String() {
			t.Errorf("POD_NAMESPACE=%q: the controller selects %q, the webhooks %q and the policy binding %q; want one selector",
				tc.podNamespace, controller, webhook, binding)
		}
		if o.LeaderElectNamespace != tc.wantLeaseNS {
			t.Errorf("POD_NAMESPACE=%q: lease namespace %q, want %q", tc.podNamespace, o.LeaderElectNamespace, tc.wantLeaseNS)
		}
	}
}

// TestControllerContentType checks that the controller speaks protobuf to
// kube-apiserver by default, as kube-controller-manager does, and that the
// flag takes only what client-go can speak.
func TestControllerContentType(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    string
		wantErr string
	}{
		{name: "protobuf by default", want: "application/vnd.kubernetes.protobuf"},
		{name: "JSON on request", args: []string{"--controller-kube-api-content-type=application/json"}, want: "application/json"},
		{name: "anything else is refused", args: []string{"--controller-kube-api-content-type=application/yaml"},
			wantErr: `--controller-kube-api-content-type must be application/vnd.kubernetes.protobuf or application/json, not "application/yaml"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewControllerOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatalf("parsing flags: %v", err)
			}
			errs := o.Validate()
			if tc.wantErr != "" {
				if len(errs) != 1 || errs[0].Error() != tc.wantErr {
					t.Fatalf("validate = %v, want exactly %q", errs, tc.wantErr)
				}
				return
			}
			if len(errs) > 0 {
				t.Fatalf("validate: %v", errs)
			}
			if o.ContentType != tc.want {
				t.Errorf("content type = %q, want %q", o.ContentType, tc.want)
			}
		})
	}
}
