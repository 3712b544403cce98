package cluster

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestRewriteMountPath(t *testing.T) {
	mounts := map[string]string{
		"/var/run/etcd-client": "/work/volumes/etcd-client",
		"/tmp":                 "/work/volumes/tmp",
		"/var/run":             "/work/volumes/run",
	}
	tests := []struct {
		name, arg, want string
	}{
		{"file under a mount", "--etcd-cafile=/var/run/etcd-client/ca.crt", "--etcd-cafile=/work/volumes/etcd-client/ca.crt"},
		{"the longest mount wins", "--x=/var/run/etcd-client", "--x=/work/volumes/etcd-client"},
		{"a shorter mount", "--y=/var/run/other/f", "--y=/work/volumes/run/other/f"},
		{"a prefix that is no mount path", "--z=/tmpfoo/f", "--z=/tmpfoo/f"},
		{"no path", "--admission=capacity", "--admission=capacity"},
		{"no value", "--preempt-unmanaged", "--preempt-unmanaged"},
		{"a path inside a value is left", "--selector=a in (/tmp)", "--selector=a in (/tmp)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rewriteMountPath(tt.arg, mounts); got != tt.want {
				t.Errorf("rewriteMountPath(%q) = %q, want %q", tt.arg, got, tt.want)
			}
		})
	}
}

func TestPodProcessCommandSetsPortsLast(t *testing.T) {
	pp := &podProcess{args: []string{"--etcd-servers=https://e:2379"}, inCluster: []string{"--kubeconfig=k"}}
	got := pp.command([]int{1, 2})
	want := []string{"--etcd-servers=https://e:2379", "--secure-port=1", "--webhook-port=2", "--kubeconfig=k"}
	if !slices.Equal(got, want) {
		t.Errorf("command = %v, want %v", got, want)
	}
	for _, arg := range []string{"--secure-port=8443", "--webhook-port=9443"} {
		if !isPortFlag(arg) {
			t.Errorf("isPortFlag(%q) = false", arg)
		}
	}
	if isPortFlag("--secure-port-extra=1") {
		t.Error("isPortFlag matched another flag")
	}
}

func TestResolveEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     corev1.EnvVar
		want    string
		wantErr bool
	}{
		{"literal", corev1.EnvVar{Name: "A", Value: "b"}, "A=b", false},
		{"namespace", corev1.EnvVar{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}, "POD_NAMESPACE=" + MusterNamespace, false},
		{"memory limit", corev1.EnvVar{Name: "GOMEMLIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"}}}, "GOMEMLIMIT=536870912", false},
		{"unsupported field", corev1.EnvVar{Name: "N", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := corev1.Container{Env: []corev1.EnvVar{tt.env}, Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}}}
			got, err := resolveEnv(c)
			if (err != nil) != tt.wantErr {
				t.Fatalf("resolveEnv: %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && (len(got) != 1 || got[0] != tt.want) {
				t.Errorf("resolveEnv = %v, want [%s]", got, tt.want)
			}
		})
	}
}
