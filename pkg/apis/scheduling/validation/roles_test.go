package validation

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

func role(name string, count int32) scheduling.PodGroupRole {
	return scheduling.PodGroupRole{Name: name, Count: count}
}

// later is a role created by the driver, with a valid template.
func later(name string, count int32) scheduling.PodGroupRole {
	return scheduling.PodGroupRole{Name: name, Count: count, CreatedLater: true, Template: &scheduling.PodGroupRoleTemplate{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
	}}
}

func withTemplate(r scheduling.PodGroupRole, mod func(*scheduling.PodGroupRoleTemplate)) scheduling.PodGroupRole {
	t := &scheduling.PodGroupRoleTemplate{}
	if r.Template != nil {
		t = r.Template.DeepCopy()
	}
	mod(t)
	r.Template = t
	return r
}

// fat is a role created later whose template's node selector takes about
// kib KiB as JSON: valid labels, n entries of 63-character values.
func fat(name string, count int32, kib int) scheduling.PodGroupRole {
	return withTemplate(later(name, count), func(t *scheduling.PodGroupRoleTemplate) {
		t.NodeSelector = map[string]string{}
		for i := 0; len(t.NodeSelector)*76 < kib<<10; i++ {
			t.NodeSelector[fmt.Sprintf("k%05d", i)] = strings.Repeat("v", 63)
		}
	})
}

func withTimeout(r scheduling.PodGroupRole, seconds int32) scheduling.PodGroupRole {
	r.ReservationTimeoutSeconds = &seconds
	return r
}

// roles sets spec.roles and a gang of minCount, so that a test states both.
func roles(minCount int32, rs ...scheduling.PodGroupRole) func(*scheduling.PodGroup) {
	return func(pg *scheduling.PodGroup) {
		pg.Spec.SchedulingPolicy = gang(minCount)
		pg.Spec.Roles = rs
	}
}

func nRoles(n int) []scheduling.PodGroupRole {
	rs := make([]scheduling.PodGroupRole, n)
	for i := range rs {
		rs[i] = role(fmt.Sprintf("r%d", i), 1)
	}
	return rs
}

// ruleWant is an expected error with a phrase of its rule.
type ruleWant struct {
	want
	rule string
}

// expectRules checks the errors as expectErrors does, and that each error
// at a wanted field says the wanted rule.
func expectRules(t *testing.T, errs field.ErrorList, wants ...ruleWant) {
	t.Helper()
	plain := make([]want, len(wants))
	for i, w := range wants {
		plain[i] = w.want
	}
	expectErrors(t, errs, plain...)
	for _, w := range wants {
		for _, e := range errs {
			if e.Field == w.field && e.Type == w.typ && !strings.Contains(e.Error(), w.rule) {
				t.Errorf("error at %s does not say %q: %v", w.field, w.rule, e)
			}
		}
	}
}

func TestValidatePodGroupRoles(t *testing.T) {
	tests := []struct {
		name string
		pg   *scheduling.PodGroup
		want []ruleWant
	}{
		{"driver and workers agreeing with minCount are valid", podGroup(roles(5, role("driver", 1), role("worker", 4))), nil},
		{"8 roles are allowed", podGroup(roles(8, nRoles(8)...)), nil},
		{"a role created later with a template is valid", podGroup(roles(9, role("driver", 1), later("worker", 8))), nil},
		{"a full template is valid", podGroup(roles(2, role("driver", 1), withTemplate(role("worker", 1), func(t *scheduling.PodGroupRoleTemplate) {
			t.NodeSelector = map[string]string{"pool": "gpu"}
			t.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
			t.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}},
			}}}}
		}))), nil},

		{"templates of 60 KiB in all are valid", podGroup(roles(9, role("driver", 1), fat("worker", 4, 30), fat("ps", 4, 30))), nil},
		{"templates over 64 KiB in all are too large, and the largest is named", podGroup(roles(9, role("driver", 1), fat("worker", 4, 30), fat("ps", 4, 40))),
			[]ruleWant{{invalid("spec.roles[2].template"), "must take at most 65536 bytes together"}}},
		{"9 roles are too many", podGroup(roles(9, nRoles(9)...)), []ruleWant{{tooMany("spec.roles"), "must have at most 8 items"}}},
		{"minCount must equal the sum of counts", podGroup(roles(4, role("driver", 1), role("worker", 4))),
			[]ruleWant{{invalid("spec.schedulingPolicy.gang.minCount"), "must equal the sum of spec.roles[*].count (5)"}}},
		{"roles need a gang", podGroup(policy(basic()), func(pg *scheduling.PodGroup) { pg.Spec.Roles = []scheduling.PodGroupRole{role("a", 1)} }),
			[]ruleWant{{invalid("spec.schedulingPolicy"), "must be gang when spec.roles is set"}}},
		{"role name is required", podGroup(roles(1, role("", 1))), []ruleWant{{required("spec.roles[0].name"), "name is required"}}},
		{"role name must be a DNS label", podGroup(roles(1, role("Driver.v1", 1))), []ruleWant{{invalid("spec.roles[0].name"), "RFC 1123 label"}}},
		{"role names are unique", podGroup(roles(2, role("a", 1), role("a", 1))), []ruleWant{{duplicate("spec.roles[1].name"), "Duplicate value"}}},
		{"count must be at least 1", podGroup(roles(1, role("driver", 1), role("worker", 0))), []ruleWant{{invalid("spec.roles[1].count"), "greater than or equal to 1"}}},
		{"a role created later needs a template", podGroup(roles(2, role("driver", 1), scheduling.PodGroupRole{Name: "worker", Count: 1, CreatedLater: true})),
			[]ruleWant{{required("spec.roles[1].template"), "required when createdLater is true"}}},
		{"not every role may be created later", podGroup(roles(2, later("a", 1), later("b", 1))),
			[]ruleWant{{invalid("spec.roles"), "at least one role must not be createdLater"}}},
		{"a reservation timeout on a role created later is valid", podGroup(roles(9, role("driver", 1), withTimeout(later("worker", 8), 60))), nil},
		{"a reservation timeout needs createdLater", podGroup(roles(2, role("driver", 1), withTimeout(role("worker", 1), 60))),
			[]ruleWant{{forbidden("spec.roles[1].reservationTimeoutSeconds"), "may only be set when createdLater is true"}}},
		{"a reservation timeout is at least 1", podGroup(roles(9, role("driver", 1), withTimeout(later("worker", 8), 0))),
			[]ruleWant{{invalid("spec.roles[1].reservationTimeoutSeconds"), "greater than or equal to 1"}}},
		{"a group of MaxRolePods pods is valid", podGroup(roles(5000, role("driver", 1), later("worker", 4999))), nil},
		{"a role of more than MaxRolePods pods is invalid", podGroup(roles(2_000_001, role("driver", 1), later("worker", 2_000_000))),
			[]ruleWant{{invalid("spec.roles[1].count"), "must be at most 5000"}}},
		{"roles of more than MaxRolePods pods in all are invalid", podGroup(roles(5001, role("driver", 1), later("worker", 5000))),
			[]ruleWant{{invalid("spec.roles"), "must add up to at most 5000"}}},
		{"a reservation timeout of one hour is valid", podGroup(roles(9, role("driver", 1), withTimeout(later("worker", 8), 3600))), nil},
		{"a reservation timeout is at most one hour", podGroup(roles(9, role("driver", 1), withTimeout(later("worker", 8), 2147483647))),
			[]ruleWant{{invalid("spec.roles[1].reservationTimeoutSeconds"), "must be at most 3600"}}},
		{"negative requests are invalid", podGroup(roles(2, role("driver", 1), withTemplate(role("worker", 1), func(t *scheduling.PodGroupRoleTemplate) {
			t.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}
		}))), []ruleWant{{invalid("spec.roles[1].template.requests[cpu]"), "greater than or equal to 0"}}},
		{"request names are qualified names", podGroup(roles(2, role("driver", 1), withTemplate(role("worker", 1), func(t *scheduling.PodGroupRoleTemplate) {
			t.Requests = corev1.ResourceList{"not a name": resource.MustParse("1")}
		}))), []ruleWant{{invalid("spec.roles[1].template.requests[not a name]"), "name part must consist of alphanumeric characters"}}},
		{"nodeSelector keys are label keys", podGroup(roles(2, role("driver", 1), withTemplate(role("worker", 1), func(t *scheduling.PodGroupRoleTemplate) {
			t.NodeSelector = map[string]string{"bad key!": "x"}
		}))), []ruleWant{{invalid("spec.roles[1].template.nodeSelector"), "name part must consist of alphanumeric characters"}}},
		{"a toleration operator is Equal or Exists", podGroup(roles(2, role("driver", 1), withTemplate(role("worker", 1), func(t *scheduling.PodGroupRoleTemplate) {
			t.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: "Near"}}
		}))), []ruleWant{{notSupported("spec.roles[1].template.tolerations[0].operator"), "supported values"}}},
		{"Exists tolerates no value", podGroup(roles(2, role("driver", 1), withTemplate(role("worker", 1), func(t *scheduling.PodGroupRoleTemplate) {
			t.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists, Value: "x"}}
		}))), []ruleWant{{invalid("spec.roles[1].template.tolerations[0].value"), "must be empty when operator is Exists"}}},
		{"a node affinity operator must be known", podGroup(roles(2, role("driver", 1), withTemplate(role("worker", 1), func(t *scheduling.PodGroupRoleTemplate) {
			t.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: "Near", Values: []string{"a"}}},
			}}}}
		}))), []ruleWant{{invalid("spec.roles[1].template.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"), "Near"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectRules(t, ValidatePodGroup(tc.pg), tc.want...)
		})
	}
}

func TestValidatePodGroupRolesUpdate(t *testing.T) {
	tests := []struct {
		name     string
		old, new *scheduling.PodGroup
		want     []ruleWant
	}{
		{"counts may change with minCount", podGroup(roles(5, role("driver", 1), role("worker", 4))), podGroup(roles(9, role("driver", 1), role("worker", 8))), nil},
		{"counts must still agree with minCount", podGroup(roles(5, role("driver", 1), role("worker", 4))), podGroup(roles(5, role("driver", 1), role("worker", 8))),
			[]ruleWant{{invalid("spec.schedulingPolicy.gang.minCount"), "must equal the sum"}}},
		{"a role cannot be added", podGroup(roles(1, role("driver", 1))), podGroup(roles(2, role("driver", 1), role("worker", 1))),
			[]ruleWant{{forbidden("spec.roles"), "cannot be added or removed after creation"}}},
		{"roles cannot be set after creation", podGroup(roles(2)), podGroup(roles(2, role("driver", 1), role("worker", 1))),
			[]ruleWant{{forbidden("spec.roles"), "cannot be added or removed after creation"}}},
		{"a role cannot be removed", podGroup(roles(2, role("driver", 1), role("worker", 1))), podGroup(roles(1, role("driver", 1))),
			[]ruleWant{{forbidden("spec.roles"), "cannot be added or removed after creation"}}},
		{"a role cannot be renamed", podGroup(roles(2, role("driver", 1), role("worker", 1))), podGroup(roles(2, role("driver", 1), role("executor", 1))),
			[]ruleWant{{forbidden("spec.roles[1]"), "only count may change after creation"}}},
		{"a template cannot change", podGroup(roles(9, role("driver", 1), later("worker", 8))),
			podGroup(roles(9, role("driver", 1), withTemplate(later("worker", 8), func(t *scheduling.PodGroupRoleTemplate) { t.NodeSelector = map[string]string{"a": "b"} }))),
			[]ruleWant{{forbidden("spec.roles[1]"), "only count may change after creation"}}},
		{"createdLater cannot change", podGroup(roles(9, role("driver", 1), later("worker", 8))),
			podGroup(roles(9, role("driver", 1), func() scheduling.PodGroupRole { r := later("worker", 8); r.CreatedLater = false; return r }())),
			[]ruleWant{{forbidden("spec.roles[1]"), "only count may change after creation"}}},
		{"a count stored above the bound may stay", podGroup(roles(6001, role("driver", 1), later("worker", 6000))),
			podGroup(roles(6001, role("driver", 1), later("worker", 6000))), nil},
		{"a count stored above the bound may be lowered", podGroup(roles(6001, role("driver", 1), later("worker", 6000))),
			podGroup(roles(5501, role("driver", 1), later("worker", 5500))), nil},
		{"a count cannot be raised above the bound", podGroup(roles(4001, role("driver", 1), later("worker", 4000))),
			podGroup(roles(5002, role("driver", 1), later("worker", 5001))),
			[]ruleWant{{invalid("spec.roles[1].count"), "must be at most 5000"}}},
		{"counts cannot be raised above the bound in all", podGroup(roles(4001, role("driver", 1), later("worker", 4000))),
			podGroup(roles(5001, role("driver", 1), later("worker", 5000))),
			[]ruleWant{{invalid("spec.roles"), "must add up to at most 5000"}}},
		{"templates stored above the bound may stay, and their counts change", podGroup(roles(9, role("driver", 1), fat("worker", 8, 80))),
			podGroup(roles(5, role("driver", 1), fat("worker", 4, 80))), nil},
		{"a timeout stored above the bound may stay", podGroup(roles(9, role("driver", 1), withTimeout(later("worker", 8), 86400))),
			podGroup(roles(9, role("driver", 1), withTimeout(later("worker", 8), 86400))), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectRules(t, ValidatePodGroupUpdate(tc.new, tc.old), tc.want...)
		})
	}
}

func TestValidatePodGroupRoleStatus(t *testing.T) {
	spec := roles(5, role("driver", 1), role("worker", 4))
	withRoleStatus := func(rs ...scheduling.PodGroupRoleStatus) func(*scheduling.PodGroup) {
		return func(pg *scheduling.PodGroup) { pg.Status.Roles = rs }
	}
	tests := []struct {
		name     string
		old, new *scheduling.PodGroup
		want     []ruleWant
	}{
		{"per-role counts are valid", podGroup(spec), podGroup(spec, withRoleStatus(scheduling.PodGroupRoleStatus{Name: "driver", Active: 1}, scheduling.PodGroupRoleStatus{Name: "worker", Active: 2, Succeeded: 1, Failed: 1})), nil},
		{"a role status names a role of the spec", podGroup(spec), podGroup(spec, withRoleStatus(scheduling.PodGroupRoleStatus{Name: "ps"})),
			[]ruleWant{{want{field.ErrorTypeNotFound, "status.roles[0].name"}, "Not found"}}},
		{"a role status appears once", podGroup(spec), podGroup(spec, withRoleStatus(scheduling.PodGroupRoleStatus{Name: "driver"}, scheduling.PodGroupRoleStatus{Name: "driver"})),
			[]ruleWant{{duplicate("status.roles[1].name"), "Duplicate"}}},
		{"counts are not negative", podGroup(spec), podGroup(spec, withRoleStatus(scheduling.PodGroupRoleStatus{Name: "worker", Active: -1})),
			[]ruleWant{{invalid("status.roles[0].active"), "must be greater than or equal to 0"}}},
		{"succeeded does not decrease", podGroup(spec, withRoleStatus(scheduling.PodGroupRoleStatus{Name: "worker", Succeeded: 2})), podGroup(spec, withRoleStatus(scheduling.PodGroupRoleStatus{Name: "worker", Succeeded: 1})),
			[]ruleWant{{invalid("status.roles[0].succeeded"), "must not decrease (was 2)"}}},
		{"failed does not decrease", podGroup(spec, withRoleStatus(scheduling.PodGroupRoleStatus{Name: "worker", Failed: 2})), podGroup(spec, withRoleStatus(scheduling.PodGroupRoleStatus{Name: "worker", Failed: 1})),
			[]ruleWant{{invalid("status.roles[0].failed"), "must not decrease (was 2)"}}},
		{"a role with finished pods is not dropped", podGroup(spec, withRoleStatus(scheduling.PodGroupRoleStatus{Name: "worker", Failed: 2})), podGroup(spec),
			[]ruleWant{{forbidden("status.roles"), `role "worker" cannot be removed`}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectRules(t, ValidatePodGroupStatusUpdate(tc.new, tc.old), tc.want...)
		})
	}
}

func TestValidatePodGroupReservations(t *testing.T) {
	spec := roles(9, role("driver", 1), later("worker", 8))
	withReservations := func(rs ...scheduling.RoleReservation) func(*scheduling.PodGroup) {
		return func(pg *scheduling.PodGroup) { pg.Status.Reservations = rs }
	}
	res := func(role, node string, count int32) scheduling.RoleReservation {
		return scheduling.RoleReservation{Role: role, Node: node, Count: count}
	}
	tests := []struct {
		name string
		pg   *scheduling.PodGroup
		want []ruleWant
	}{
		{"reservations of a role created later are valid", podGroup(spec, withReservations(res("worker", "n1", 5), res("worker", "n2", 3))), nil},
		{"a reservation names a role created later", podGroup(spec, withReservations(res("driver", "n1", 1))),
			[]ruleWant{{want{field.ErrorTypeNotFound, "status.reservations[0].role"}, "Not found"}}},
		{"a reservation names a node", podGroup(spec, withReservations(res("worker", "Not_A_Node", 1))),
			[]ruleWant{{invalid("status.reservations[0].node"), "RFC 1123 subdomain"}}},
		{"a role and node appear once", podGroup(spec, withReservations(res("worker", "n1", 1), res("worker", "n1", 1))),
			[]ruleWant{{duplicate("status.reservations[1]"), "role worker on node n1"}}},
		{"a reservation holds at least one pod", podGroup(spec, withReservations(res("worker", "n1", 0))),
			[]ruleWant{{invalid("status.reservations[0].count"), "greater than or equal to 1"}}},
		{"reservations hold no more than the role's count", podGroup(spec, withReservations(res("worker", "n1", 5), res("worker", "n2", 4))),
			[]ruleWant{{invalid("status.reservations[0].count"), "add up to 9, more than its count 8"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expectRules(t, ValidatePodGroupStatusUpdate(tc.pg, podGroup(spec)), tc.want...)
		})
	}
}

func TestValidateWorkloadRoles(t *testing.T) {
	tplRoles := func(minCount int32, rs ...scheduling.PodGroupRole) func(*scheduling.Workload) {
		return template(0, func(t *scheduling.PodGroupTemplate) { t.SchedulingPolicy = gang(minCount); t.Roles = rs })
	}
	t.Run("create", func(t *testing.T) {
		expectRules(t, ValidateWorkload(workload(tplRoles(5, role("driver", 1), role("worker", 4)))))
		expectRules(t, ValidateWorkload(workload(tplRoles(3, role("driver", 1), role("worker", 4)))),
			ruleWant{invalid("spec.podGroupTemplates[0].schedulingPolicy.gang.minCount"), "must equal the sum of spec.podGroupTemplates[0].roles[*].count (5)"})
		expectRules(t, ValidateWorkload(workload(tplRoles(9, nRoles(9)...))), ruleWant{tooMany("spec.podGroupTemplates[0].roles"), "at most 8"})
		expectRules(t, ValidateWorkload(workload(tplRoles(5001, role("driver", 1), role("worker", 5000)))),
			ruleWant{invalid("spec.podGroupTemplates[0].roles"), "must add up to at most 5000"})
		expectRules(t, ValidateWorkload(workload(tplRoles(5, role("driver", 1), fat("worker", 4, 80)))),
			ruleWant{invalid("spec.podGroupTemplates[0].roles[1].template"), "must take at most 65536 bytes together"})
	})
	t.Run("update", func(t *testing.T) {
		old := workload(tplRoles(5, role("driver", 1), role("worker", 4)))
		expectRules(t, ValidateWorkloadUpdate(workload(tplRoles(9, role("driver", 1), role("worker", 8))), old))
		expectRules(t, ValidateWorkloadUpdate(workload(tplRoles(5, role("driver", 1), role("executor", 4))), old),
			ruleWant{forbidden("spec.podGroupTemplates[0].roles[1]"), "only count may change after creation"})
		expectRules(t, ValidateWorkloadUpdate(workload(tplRoles(5002, role("driver", 1), role("worker", 5001))), old),
			ruleWant{invalid("spec.podGroupTemplates[0].roles[1].count"), "must be at most 5000"})
		expectRules(t, ValidateWorkloadUpdate(workload(tplRoles(1, role("driver", 1))), old),
			ruleWant{forbidden("spec.podGroupTemplates[0].roles"), "cannot be added or removed"})
	})
}
