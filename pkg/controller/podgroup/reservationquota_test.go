package podgroup

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

func TestReservationOverQuota(t *testing.T) {
	rl := func(kv ...string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	q := func(name string, hard, used corev1.ResourceList, scopes ...corev1.ResourceQuotaScope) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec:       corev1.ResourceQuotaSpec{Hard: hard, Scopes: scopes},
			Status:     corev1.ResourceQuotaStatus{Hard: hard, Used: used},
		}
	}
	pg := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "spark", Namespace: "ns"},
		Spec: v1alpha1.PodGroupSpec{Roles: []v1alpha1.PodGroupRole{
			{Name: "driver", Count: 1},
			{Name: "worker", Count: 11, CreatedLater: true, Template: &v1alpha1.PodGroupRoleTemplate{Requests: rl("cpu", "10", "memory", "1Gi")}},
		}},
	}
	cases := []struct {
		name    string
		missing map[string]int32
		quotas  []*corev1.ResourceQuota
		// want is "" for within quota, else what the message must say.
		want []string
	}{
		{"no quota", map[string]int32{"worker": 11}, nil, nil},
		{"within every limit", map[string]int32{"worker": 11}, []*corev1.ResourceQuota{q("big", rl("requests.cpu", "200", "pods", "20"), rl("requests.cpu", "1", "pods", "1"))}, nil},
		{"cpu past what is left", map[string]int32{"worker": 11}, []*corev1.ResourceQuota{q("tenant", rl("requests.cpu", "16"), rl("requests.cpu", "1"))},
			[]string{"spec.roles[1].count (11)", "ResourceQuota tenant", "requests.cpu: needs 110, has 15 left (hard 16, used 1)"}},
		{"only the pods still missing count", map[string]int32{"worker": 1}, []*corev1.ResourceQuota{q("tenant", rl("requests.cpu", "16"), rl("requests.cpu", "1"))}, nil},
		{"pod count past what is left", map[string]int32{"worker": 11}, []*corev1.ResourceQuota{q("pods", rl("pods", "10"), rl("pods", "1"))},
			[]string{"ResourceQuota pods", "pods: needs 11, has 9 left"}},
		{"a limit the template does not use", map[string]int32{"worker": 11}, []*corev1.ResourceQuota{q("gpus", rl("requests.nvidia.com/gpu", "1"), rl())}, nil},
		{"a quota whose scope the template is out of", map[string]int32{"worker": 11}, []*corev1.ResourceQuota{q("besteffort", rl("pods", "1"), rl(), corev1.ResourceQuotaScopeBestEffort)}, nil},
		{"the first quota exceeded, by name", map[string]int32{"worker": 11}, []*corev1.ResourceQuota{q("zz", rl("requests.cpu", "1"), rl()), q("aa", rl("requests.memory", "1Gi"), rl())},
			[]string{"ResourceQuota aa", "requests.memory: needs 11Gi"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := reservationOverQuota(pg, tc.missing, tc.quotas)
			if err != nil {
				t.Fatal(err)
			}
			if len(tc.want) == 0 {
				if got != "" {
					t.Fatalf("refused: %s", got)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("message %q does not say %q", got, w)
				}
			}
		})
	}
}
