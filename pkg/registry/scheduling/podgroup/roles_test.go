package podgroup

import (
	"strings"
	"testing"

	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

func withRoles(minCount int32, roles ...scheduling.PodGroupRole) func(*scheduling.PodGroup) {
	return func(pg *scheduling.PodGroup) {
		pg.Spec.SchedulingPolicy = scheduling.PodGroupSchedulingPolicy{Gang: &scheduling.GangSchedulingPolicy{MinCount: minCount}}
		pg.Spec.Roles = roles
	}
}

func withRoleStatus(rs ...scheduling.PodGroupRoleStatus) func(*scheduling.PodGroup) {
	return func(pg *scheduling.PodGroup) { pg.Status.Roles = rs }
}

// TestRolesStrategy: roles go through the strategies of both resources as
// the rest of the spec and status do: a spec write keeps the stored per-role
// counts, a status write keeps the stored roles, and only counts may change.
func TestRolesStrategy(t *testing.T) {
	ctx := genericapirequest.NewDefaultContext()
	s := testStrategy()
	sparkRoles := withRoles(5, scheduling.PodGroupRole{Name: "driver", Count: 1}, scheduling.PodGroupRole{Name: "worker", Count: 4})
	counted := withRoleStatus(scheduling.PodGroupRoleStatus{Name: "worker", Active: 4, Succeeded: 1})

	tests := []struct {
		name      string
		status    bool // a write to podgroups/status
		old, obj  *scheduling.PodGroup
		want      *scheduling.PodGroup
		wantError string // the field of the one expected error, if any
	}{
		{"a spec write keeps the stored per-role counts", false,
			newPodGroup(withGeneration(1), sparkRoles, counted),
			newPodGroup(withGeneration(1), sparkRoles, withRoleStatus(scheduling.PodGroupRoleStatus{Name: "worker", Active: 9})),
			newPodGroup(withGeneration(1), sparkRoles, counted, withPhase(scheduling.PodGroupPending)), ""},
		{"a status write keeps the stored roles", true,
			newPodGroup(withGeneration(1), sparkRoles),
			newPodGroup(withGeneration(1), withRoles(2, scheduling.PodGroupRole{Name: "ps", Count: 2}), counted),
			newPodGroup(withGeneration(1), sparkRoles, counted, withPhase(scheduling.PodGroupPending)), ""},
		{"a count change with minCount bumps the generation", false,
			newPodGroup(withGeneration(1), sparkRoles),
			newPodGroup(withGeneration(1), withRoles(9, scheduling.PodGroupRole{Name: "driver", Count: 1}, scheduling.PodGroupRole{Name: "worker", Count: 8})),
			newPodGroup(withGeneration(2), withRoles(9, scheduling.PodGroupRole{Name: "driver", Count: 1}, scheduling.PodGroupRole{Name: "worker", Count: 8}), withPhase(scheduling.PodGroupPending)), ""},
		{"renaming a role is rejected", false,
			newPodGroup(withGeneration(1), sparkRoles),
			newPodGroup(withGeneration(1), withRoles(5, scheduling.PodGroupRole{Name: "driver", Count: 1}, scheduling.PodGroupRole{Name: "executor", Count: 4})),
			nil, "spec.roles[1]"},
		{"adding roles after creation is rejected", false,
			newPodGroup(withGeneration(1), withMinCount(5)),
			newPodGroup(withGeneration(1), sparkRoles),
			nil, "spec.roles"},
		{"a status write may not drop a role's finished count", true,
			newPodGroup(withGeneration(1), sparkRoles, counted),
			newPodGroup(withGeneration(1), sparkRoles, withRoleStatus(scheduling.PodGroupRoleStatus{Name: "worker", Active: 4})),
			nil, "status.roles[0].succeeded"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.status {
				st := NewStatusStrategy(s)
				st.PrepareForUpdate(ctx, tc.obj, tc.old)
				expectOneError(t, st.ValidateUpdate(ctx, tc.obj, tc.old).ToAggregate(), tc.wantError)
			} else {
				s.PrepareForUpdate(ctx, tc.obj, tc.old)
				expectOneError(t, s.ValidateUpdate(ctx, tc.obj, tc.old).ToAggregate(), tc.wantError)
			}
			if tc.want != nil {
				expectObject(t, tc.obj, tc.want)
			}
		})
	}
}

func expectOneError(t *testing.T, err interface{ Errors() []error }, field string) {
	t.Helper()
	var errs []error
	if err != nil {
		errs = err.Errors()
	}
	switch {
	case field == "" && len(errs) > 0:
		t.Errorf("unexpected errors: %v", errs)
	case field != "" && (len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), field+":")):
		t.Errorf("errors = %v, want one at %s", errs, field)
	}
}
