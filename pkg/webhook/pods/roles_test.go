package pods

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/podtest"
)

const (
	roleField          = "metadata.labels[scheduling.muster.dev/role]"
	rolesField         = "metadata.annotations[scheduling.muster.dev/roles]"
	roleCountField     = "metadata.annotations[scheduling.muster.dev/role-count]"
	rolesTemplateField = "metadata.annotations[scheduling.muster.dev/roles-template]"
)

func TestValidateRolesOnCreate(t *testing.T) {
	role := func(r string) func(*corev1.Pod) { return podtest.Label(scheduling.RoleLabel, r) }
	roles := func(v string) func(*corev1.Pod) { return podtest.Annotation(scheduling.RolesAnnotation, v) }
	count := func(v string) func(*corev1.Pod) { return podtest.Annotation(scheduling.RoleCountAnnotation, v) }
	tmpl := func(v string) func(*corev1.Pod) { return podtest.Annotation(scheduling.RolesTemplateAnnotation, v) }
	tests := []struct {
		name string
		pod  *corev1.Pod
		want []want
		rule string // a phrase of the rule every error says
	}{
		{"a role with roles and a count is valid", podtest.Pod(podtest.InGroup("spark"), role("worker"), roles("2"), count("8")), nil, ""},
		{"a role alone is valid (a group with spec.roles)", podtest.Pod(podtest.InGroup("spark"), role("driver")), nil, ""},
		{"8 roles are valid", podtest.Pod(podtest.InGroup("spark"), role("driver"), roles("8")), nil, ""},
		{"a driver with a roles template is valid", podtest.Pod(podtest.InGroup("spark"), role("driver"), tmpl(`[{"name":"worker","count":8,"template":{"requests":{"cpu":"3"}}}]`)), nil, ""},

		{"the role must be a DNS label", podtest.Pod(podtest.InGroup("spark"), role("Driver.v1")), []want{invalid(roleField)}, "RFC 1123 label"},
		{"the role must not be empty", podtest.Pod(podtest.InGroup("spark"), role("")), []want{required(roleField)}, "must name the pod's role"},
		{"9 roles are too many", podtest.Pod(podtest.InGroup("spark"), role("driver"), roles("9")), []want{invalid(rolesField)}, "an integer from 1 to 8"},
		{"0 roles are too few", podtest.Pod(podtest.InGroup("spark"), role("driver"), roles("0")), []want{invalid(rolesField)}, "an integer from 1 to 8"},
		{"the role count must be positive", podtest.Pod(podtest.InGroup("spark"), role("worker"), roles("2"), count("0")), []want{invalid(roleCountField)}, "positive 32-bit integer"},
		{"roles need the role label", podtest.Pod(podtest.InGroup("spark"), roles("2")), []want{required(roleField)}, "must be set when annotation scheduling.muster.dev/roles is set"},
		{"a roles template must be JSON", podtest.Pod(podtest.InGroup("spark"), role("driver"), tmpl(`workers: 8`)), []want{invalid(rolesTemplateField)}, "must be a JSON list of roles"},
		{"a role created later needs a template", podtest.Pod(podtest.InGroup("spark"), role("driver"), tmpl(`[{"name":"worker","count":8}]`)),
			[]want{required(rolesTemplateField + "[0].template")}, "required when createdLater is true"},
		{"a roles template needs the role label", podtest.Pod(podtest.InGroup("spark"), tmpl(`[{"name":"worker","count":8,"template":{}}]`)), []want{required(roleField)},
			"must be set when annotation scheduling.muster.dev/roles-template is set"},
		{"the role count is at most MaxRolePods", podtest.Pod(podtest.InGroup("spark"), role("worker"), roles("2"), count("5001")), []want{invalid(roleCountField)}, "must be at most 5000"},
		{"a roles template of 2,000,000 workers", podtest.Pod(podtest.InGroup("spark"), role("driver"), tmpl(`[{"name":"worker","count":2000000,"template":{}}]`)),
			[]want{invalid(rolesTemplateField + "[0].count")}, "must be at most 5000"},
		{"a roles template's reservation is at most an hour", podtest.Pod(podtest.InGroup("spark"), role("driver"), tmpl(`[{"name":"worker","count":8,"reservationTimeoutSeconds":2147483647,"template":{}}]`)),
			[]want{invalid(rolesTemplateField + "[0].reservationTimeoutSeconds")}, "must be at most 3600"},
		{"a count needs the role label", podtest.Pod(podtest.InGroup("spark"), count("3")), []want{required(roleField)}, "must be set when annotation scheduling.muster.dev/role-count is set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := validateCreate(tt.pod)
			expectErrors(t, errs, tt.want...)
			for _, e := range errs {
				if !strings.Contains(e.Error(), tt.rule) {
					t.Errorf("error %q does not say %q", e.Error(), tt.rule)
				}
			}
		})
	}
}
