package scheduling

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestInstanceGroupName(t *testing.T) {
	long := strings.Repeat("a", 62)
	tests := []struct {
		name    string
		groupBy string
		labels  map[string]string
		want    string
		// wantErr is a part of the error; "" wants none.
		wantErr string
	}{
		{"a Job's pod is named after the Job", GroupByInstance,
			map[string]string{"batch.kubernetes.io/job-name": "trainer-job-2", "batch.kubernetes.io/controller-uid": "u"}, "trainer-job-2", ""},
		{"a JobSet's pod is named after the JobSet and its attempt, not its child Job", GroupByInstance,
			map[string]string{"batch.kubernetes.io/job-name": "js-workers-0", "jobset.sigs.k8s.io/jobset-name": "js", "jobset.sigs.k8s.io/restart-attempt": "1"}, "js-1", ""},
		{"a LeaderWorkerSet's pod is named as its leader", GroupByInstance,
			map[string]string{"leaderworkerset.sigs.k8s.io/name": "lws", "leaderworkerset.sigs.k8s.io/group-index": "3"}, "lws-3", ""},
		{"a Ray pod is named after its cluster", GroupByInstance,
			map[string]string{"ray.io/cluster": "raycluster-kuberay", "ray.io/node-type": "worker"}, "raycluster-kuberay", ""},
		{"a partial set does not match: the next one does", GroupByInstance,
			map[string]string{"jobset.sigs.k8s.io/jobset-name": "js", "batch.kubernetes.io/job-name": "j"}, "j", ""},
		{"instance with no known label names them all", GroupByInstance,
			map[string]string{"app": "x"}, "", "none of: JobSet (jobset.sigs.k8s.io/jobset-name, jobset.sigs.k8s.io/restart-attempt)"},
		{"listed keys are joined in the order listed", "example.com/run,example.com/attempt",
			map[string]string{"example.com/attempt": "2", "example.com/run": "nightly"}, "nightly-2", ""},
		{"a listed key with spaces around it is read", "example.com/run, example.com/attempt",
			map[string]string{"example.com/attempt": "2", "example.com/run": "nightly"}, "nightly-2", ""},
		{"a missing listed label is named", "example.com/run,example.com/attempt",
			map[string]string{"example.com/run": "nightly"}, "", "lists the labels example.com/attempt"},
		{"an empty listed label is missing", "example.com/run",
			map[string]string{"example.com/run": ""}, "", "lists the labels example.com/run"},
		{"a value that is not a key is refused with the rule", "not a key!", nil, "", GroupByRule},
		{"too many keys are refused", "a,b,c,d,e", nil, "", "lists 5 label keys"},
		{"an empty value is refused", "", nil, "", GroupByRule},
		{"uppercase and underscores are replaced and hashed", "example.com/run",
			map[string]string{"example.com/run": "Nightly_Run"}, "nightly-run-", ""},
		{"a name past 63 characters is cut and hashed", GroupByInstance,
			map[string]string{"jobset.sigs.k8s.io/jobset-name": long, "jobset.sigs.k8s.io/restart-attempt": "0"}, strings.Repeat("a", 52) + "-", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := InstanceGroupName(tt.groupBy, tt.labels)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("InstanceGroupName(%q) error = %v, want one containing %q", tt.groupBy, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("InstanceGroupName(%q): %v", tt.groupBy, err)
			}
			if strings.HasSuffix(tt.want, "-") {
				// Changed names end in 10 hex digits of a hash.
				if !strings.HasPrefix(got, tt.want) || len(got) != len(tt.want)+instanceHashLen {
					t.Errorf("InstanceGroupName = %q, want %q and %d hex digits", got, tt.want, instanceHashLen)
				}
			} else if got != tt.want {
				t.Errorf("InstanceGroupName = %q, want %q", got, tt.want)
			}
			if len(got) > validation.LabelValueMaxLength || len(validation.IsDNS1123Subdomain(got)) > 0 {
				t.Errorf("InstanceGroupName = %q, which is not a group name of at most 63 characters", got)
			}
		})
	}
}

// TestInstanceGroupNameKeepsInstancesApart: two values that clean to the same
// text still name different groups.
func TestInstanceGroupNameKeepsInstancesApart(t *testing.T) {
	a, errA := InstanceGroupName("example.com/run", map[string]string{"example.com/run": "Run_1"})
	b, errB := InstanceGroupName("example.com/run", map[string]string{"example.com/run": "run.1"})
	c, errC := InstanceGroupName("example.com/run", map[string]string{"example.com/run": "RUN_1"})
	if errA != nil || errB != nil || errC != nil {
		t.Fatal(errA, errB, errC)
	}
	if a == c || b == "" || a == b {
		t.Errorf("names %q, %q, %q: want distinct names for distinct values", a, b, c)
	}
}
