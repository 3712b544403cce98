package podgroup

import (
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// TestSyncGroupFromRoles: pods with the roles annotation create their group
// once a pod of every role exists, and pods that disagree get a warning and
// no group.
func TestSyncGroupFromRoles(t *testing.T) {
	rolePod := func(name, role, roles, count string, mods ...podMod) *corev1.Pod {
		kv := []string{scheduling.RolesAnnotation, roles}
		if count != "" {
			kv = append(kv, scheduling.RoleCountAnnotation, count)
		}
		return newPod(name, append([]podMod{inRole(role), annotated(kv...), createdAt(t0)}, mods...)...)
	}
	cases := []struct {
		name string
		pods []*corev1.Pod
		// want is "role:count,..." of the created group; "" for none.
		want string
		from string
		// events are the wanted event prefixes, in any order.
		events []string
	}{
		{"a driver and a worker announce a group of two roles",
			[]*corev1.Pod{rolePod("d", "driver", "2", "", createdAt(t0.Add(-time.Minute))), rolePod("w-0", "worker", "2", "4")},
			"driver:1,worker:4", "d", []string{"Normal PodGroupCreated created PodGroup pg"}},
		{"a group is not created before a pod of every role exists",
			[]*corev1.Pod{rolePod("d", "driver", "2", "1")},
			"", "", []string{"Normal WaitingForPodGroup waiting for PodGroup pg"}},
		{"pods that disagree on the number of roles create no group",
			[]*corev1.Pod{rolePod("d", "driver", "2", "", createdAt(t0.Add(-time.Minute))), rolePod("w-0", "worker", "3", "4")},
			"", "", []string{"Warning RolesMismatch role annotations disagree with pod d of PodGroup pg: scheduling.muster.dev/roles is 3, not 2",
				"Normal WaitingForPodGroup", "Normal WaitingForPodGroup"}},
		{"pods that disagree on a role's count create no group",
			[]*corev1.Pod{rolePod("d", "driver", "2", "", createdAt(t0.Add(-time.Minute))), rolePod("w-0", "worker", "2", "4", createdAt(t0.Add(-time.Second))), rolePod("w-1", "worker", "2", "5")},
			"", "", []string{"Warning RolesMismatch role annotations disagree with pod d of PodGroup pg: role worker has scheduling.muster.dev/role-count 5 here and 4",
				"Normal WaitingForPodGroup", "Normal WaitingForPodGroup", "Normal WaitingForPodGroup"}},
		{"more roles than announced create no group",
			[]*corev1.Pod{rolePod("d", "driver", "1", "", createdAt(t0.Add(-time.Minute))), rolePod("w-0", "worker", "1", "")},
			"", "", []string{"Warning RolesMismatch role annotations disagree with pod d of PodGroup pg: pods name 2 roles (driver,worker), more than scheduling.muster.dev/roles=1",
				"Warning RolesMismatch role annotations disagree with pod d of PodGroup pg: pods name 2 roles",
				"Normal WaitingForPodGroup", "Normal WaitingForPodGroup"}},
		{"a pod without a role label is told so",
			[]*corev1.Pod{newPod("d", annotated(scheduling.RolesAnnotation, "2"))},
			"", "", []string{"Warning InvalidAnnotation label scheduling.muster.dev/role=\"\" must name the pod's role", "Normal WaitingForPodGroup"}},
		{"a driver with a roles template creates the group alone",
			[]*corev1.Pod{newPod("d", inRole("driver"), annotated(scheduling.RolesTemplateAnnotation, `[{"name":"worker","count":8,"template":{"requests":{"cpu":"3"}}}]`))},
			"driver:1,worker:8", "d", []string{"Normal PodGroupCreated created PodGroup pg"}},
		{"a roles template that agrees with the roles annotation",
			[]*corev1.Pod{newPod("d", inRole("driver"), annotated(scheduling.RolesAnnotation, "2", scheduling.RolesTemplateAnnotation, `[{"name":"worker","count":2,"template":{}}]`))},
			"driver:1,worker:2", "d", []string{"Normal PodGroupCreated created PodGroup pg"}},
		{"a roles template that disagrees with the roles annotation creates no group",
			[]*corev1.Pod{newPod("d", inRole("driver"), annotated(scheduling.RolesAnnotation, "3", scheduling.RolesTemplateAnnotation, `[{"name":"worker","count":2,"template":{}}]`))},
			"", "", []string{"Warning InvalidAnnotation annotation scheduling.muster.dev/roles=\"3\", but scheduling.muster.dev/roles-template names 2 roles", "Normal WaitingForPodGroup"}},
		{"an invalid roles template is told, naming the field",
			[]*corev1.Pod{newPod("d", inRole("driver"), annotated(scheduling.RolesTemplateAnnotation, `[{"name":"worker","count":2}]`))},
			"", "", []string{"Warning InvalidAnnotation metadata.annotations[scheduling.muster.dev/roles-template][0].template: Required value", "Normal WaitingForPodGroup"}},
		{"a roles template of 2,000,000 workers creates no group, naming the field and the bound",
			[]*corev1.Pod{newPod("d", inRole("driver"), annotated(scheduling.RolesTemplateAnnotation, `[{"name":"worker","count":2000000,"template":{}}]`))},
			"", "", []string{"Warning InvalidAnnotation metadata.annotations[scheduling.muster.dev/roles-template][0].count: Invalid value: 2000000: must be at most 5000", "Normal WaitingForPodGroup"}},
		{"a roles template of a 68-year reservation creates no group",
			[]*corev1.Pod{newPod("d", inRole("driver"), annotated(scheduling.RolesTemplateAnnotation, `[{"name":"worker","count":8,"reservationTimeoutSeconds":2147483647,"template":{}}]`))},
			"", "", []string{"Warning InvalidAnnotation metadata.annotations[scheduling.muster.dev/roles-template][0].reservationTimeoutSeconds: Invalid value: 2147483647: must be at most 3600", "Normal WaitingForPodGroup"}},
		{"nine roles are too many",
			[]*corev1.Pod{rolePod("d", "driver", "9", "")},
			"", "", []string{"Warning InvalidAnnotation annotation scheduling.muster.dev/roles=\"9\" must be an integer from 1 to 8", "Normal WaitingForPodGroup"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{}
			for _, p := range tc.pods {
				objs = append(objs, p)
			}
			h := newHarness(t, nil, objs...)
			h.sync()
			_, err := h.muster.Tracker().Get(podGroupsGVR, testNS, testGroup)
			switch got := h.created(); {
			case tc.want == "" && err == nil:
				t.Errorf("created PodGroup %+v, want none", got.Spec)
			case tc.want != "" && err != nil:
				t.Errorf("no PodGroup created, want one with roles %s", tc.want)
			case tc.want != "":
				var roles []string
				var sum int32
				for _, r := range got.Spec.Roles {
					roles = append(roles, r.Name+":"+strconv.Itoa(int(r.Count)))
					sum += r.Count
				}
				if strings.Join(roles, ",") != tc.want || got.Spec.SchedulingPolicy.Gang == nil || got.Spec.SchedulingPolicy.Gang.MinCount != sum {
					t.Errorf("created spec = %+v, want roles %s and a gang of their sum", got.Spec, tc.want)
				}
				if from := got.Annotations[scheduling.CreatedFromPodAnnotation]; from != tc.from {
					t.Errorf("created from pod %q, want %q", from, tc.from)
				}
			}
			events := h.events()
			if len(events) != len(tc.events) {
				t.Fatalf("events = %q, want %d starting with %q", events, len(tc.events), tc.events)
			}
			used := make([]bool, len(events))
		next:
			for _, w := range tc.events {
				for i, e := range events {
					if !used[i] && strings.HasPrefix(e, w) {
						used[i] = true
						continue next
					}
				}
				t.Errorf("no event starts with %q; events: %q", w, events)
			}
		})
	}
}
