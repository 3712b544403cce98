package validation

import (
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

func TestRolesFromTemplate(t *testing.T) {
	path := field.NewPath("metadata", "annotations").Key(scheduling.RolesTemplateAnnotation)
	at := func(s string) string { return path.String() + s }
	tests := []struct {
		name      string
		value     string
		ownCount  int32
		wantRoles string // name:count[:later], in order
		want      []ruleWant
	}{
		{name: "workers created later, the driver implied", value: `[{"name":"worker","count":8,"template":{"requests":{"cpu":"3"}}}]`, ownCount: 1,
			wantRoles: "driver:1 worker:8:later"},
		{name: "the driver listed with its count", value: `[{"name":"driver","count":1},{"name":"exec","count":2,"createdLater":true,"template":{}}]`, ownCount: 1,
			wantRoles: "driver:1 exec:2:later"},
		{name: "not JSON", value: `workers: 8`, ownCount: 1, want: []ruleWant{{invalid(at("")), "must be a JSON list of roles"}}},
		{name: "an unknown field", value: `[{"name":"worker","count":8,"templates":{}}]`, ownCount: 1, want: []ruleWant{{invalid(at("")), `unknown field "templates"`}}},
		{name: "an empty list", value: `[]`, ownCount: 1, want: []ruleWant{{required(at("")), "must list the roles"}}},
		{name: "a later role needs a template", value: `[{"name":"worker","count":8}]`, ownCount: 1,
			want: []ruleWant{{required(at("[0].template")), "required when createdLater is true"}}},
		{name: "a later role's count is at least 1", value: `[{"name":"worker","count":0,"template":{}}]`, ownCount: 1,
			want: []ruleWant{{invalid(at("[0].count")), "greater than or equal to 1"}}},
		{name: "a template's requests are checked", value: `[{"name":"worker","count":1,"template":{"requests":{"cpu":"-1"}}}]`, ownCount: 1,
			want: []ruleWant{{invalid(at("[0].template.requests[cpu]")), "greater than or equal to 0"}}},
		{name: "the own role's count must agree", value: `[{"name":"driver","count":2},{"name":"w","count":1,"template":{}}]`, ownCount: 1,
			want: []ruleWant{{invalid(at("[0].count")), "must equal the pod's scheduling.muster.dev/role-count (1)"}}},
		{name: "the own role takes no template", value: `[{"name":"driver","count":1,"template":{}},{"name":"w","count":1,"template":{}}]`, ownCount: 1,
			want: []ruleWant{{invalid(at("[0]")), "the pod's own role exists already"}}},
		{name: "too many roles", value: `[{"name":"a","count":1,"template":{}},{"name":"b","count":1,"template":{}},{"name":"c","count":1,"template":{}},{"name":"d","count":1,"template":{}},{"name":"e","count":1,"template":{}},{"name":"f","count":1,"template":{}},{"name":"g","count":1,"template":{}},{"name":"h","count":1,"template":{}}]`, ownCount: 1,
			want: []ruleWant{{tooMany(at("")), "must have at most 8 items"}}},
		{name: "a role of 2,000,000 workers", value: `[{"name":"worker","count":2000000,"template":{}}]`, ownCount: 1,
			want: []ruleWant{{invalid(at("[0].count")), "must be at most 5000"}}},
		{name: "roles of more than 5,000 pods in all", value: `[{"name":"worker","count":5000,"template":{}}]`, ownCount: 1,
			want: []ruleWant{{invalid(at("")), "must add up to at most 5000"}}},
		{name: "a 68-year reservation", value: `[{"name":"worker","count":8,"reservationTimeoutSeconds":2147483647,"template":{}}]`, ownCount: 1,
			want: []ruleWant{{invalid(at("[0].reservationTimeoutSeconds")), "must be at most 3600"}}},
		{name: "counts that overflow minCount", value: `[{"name":"a","count":2147483647,"template":{}}]`, ownCount: 1,
			want: []ruleWant{{invalid(at("")), "add up to at most 2147483647"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			roles, errs := RolesFromTemplate(tc.value, "driver", tc.ownCount, path)
			expectRules(t, errs, tc.want...)
			if len(tc.want) > 0 {
				if roles != nil {
					t.Errorf("roles %+v returned with errors", roles)
				}
				return
			}
			got := ""
			for _, r := range roles {
				if got != "" {
					got += " "
				}
				got += r.Name + ":" + strconv.Itoa(int(r.Count))
				if r.CreatedLater {
					got += ":later"
				}
			}
			if got != tc.wantRoles {
				t.Errorf("roles %q, want %q", got, tc.wantRoles)
			}
		})
	}
}
