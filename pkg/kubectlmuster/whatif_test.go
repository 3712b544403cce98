package kubectlmuster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	musterfake "github.com/muster-dev/muster/pkg/generated/clientset/versioned/fake"
)

const (
	podGroupTrain = `apiVersion: scheduling.muster.dev/v1alpha1
kind: PodGroup
metadata:
  name: train
spec:
  schedulingPolicy:
    gang:
      minCount: 4
`
	jobTrain = `apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  parallelism: 4
  completions: 4
  template:
    metadata:
      labels: {scheduling.muster.dev/pod-group: train}
    spec:
      restartPolicy: Never
      containers: [{name: main, image: registry.k8s.io/pause:3.10}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
`
	jobSetLLM = `apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: llm
  namespace: team-b
spec:
  replicatedJobs:
  - name: leader
    template:
      spec:
        template:
          metadata:
            labels: {scheduling.muster.dev/pod-group: llm, scheduling.muster.dev/role: leader}
          spec: {containers: [{name: main, image: registry.k8s.io/pause:3.10}]}
  - name: worker
    template:
      spec:
        template:
          metadata:
            labels: {scheduling.muster.dev/pod-group: llm, scheduling.muster.dev/role: worker}
          spec: {containers: [{name: main, image: registry.k8s.io/pause:3.10}]}
---
apiVersion: scheduling.muster.dev/v1alpha1
kind: PodGroup
metadata: {name: llm, namespace: team-b}
spec: {schedulingPolicy: {gang: {minCount: 4}}}
---
apiVersion: scheduling.muster.dev/v1alpha1
kind: PodGroup
metadata: {name: llm, namespace: team-a}
spec:
  schedulingPolicy: {gang: {minCount: 4}}
  roles:
  - {name: leader, count: 1, template: {requests: {cpu: "2"}}}
  - {name: worker, count: 3, template: {requests: {cpu: "1"}, nodeSelector: {pool: gpu}}}
`
	// A PodGroup with pod templates: a driver, and executors it creates.
	podGroupSpark = `apiVersion: scheduling.muster.dev/v1alpha1
kind: PodGroup
metadata: {name: spark}
spec:
  schedulingPolicy: {gang: {minCount: 5}}
  roles:
  - {name: driver, count: 1, template: {requests: {cpu: "1"}}}
  - {name: executor, count: 4, createdLater: true, template: {requests: {cpu: "4"}}}
`
	// A v1 List of two pods of group sweep, a pod of its own group, and
	// a Deployment.
	podsSweep = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: sweep-0, labels: {scheduling.muster.dev/pod-group: sweep}}
  spec: {containers: [{name: main, image: registry.k8s.io/pause:3.10}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: sweep-1, labels: {scheduling.muster.dev/pod-group: sweep}}
  spec: {containers: [{name: main, image: registry.k8s.io/pause:3.10}]}
---
apiVersion: v1
kind: Pod
metadata: {name: solo, labels: {scheduling.muster.dev/pod-group: solo}}
spec: {containers: [{name: main, image: registry.k8s.io/pause:3.10}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
`
)

var (
	runs = v1alpha1.WhatIfReviewStatus{
		PodGroup: "train", MinCount: 4, Pods: 4, Priority: 1000, Admitted: true, Reason: scheduling.ReasonGangFits,
		Placements: []v1alpha1.WhatIfPlacement{{Pod: "train-0", Node: "node-1"}, {Pod: "train-1", Node: "node-1"}, {Pod: "train-2", Node: "node-2"}, {Pod: "train-3", Node: "node-2"}},
		Domain:     "topology.example.com/rack=rack-1",
		Queue:      v1alpha1.QueuePosition{Position: 1, Waiting: 1},
	}
	preempts = v1alpha1.WhatIfReviewStatus{
		PodGroup: "llm", MinCount: 4, Pods: 4, Priority: 1000, Reason: scheduling.ReasonPreempting,
		Message:     "preempts 2 gangs of lower priority to fit",
		Placements:  []v1alpha1.WhatIfPlacement{{Pod: "llm-leader-0-0", Node: "node-1"}, {Pod: "llm-worker-0-0", Node: "node-1"}, {Pod: "llm-worker-0-1", Node: "node-2"}, {Pod: "llm-worker-0-2", Node: "node-2"}},
		Preemptions: []v1alpha1.WhatIfPreemption{{Namespace: "team-b", PodGroup: "batch-7", Pods: 4, Priority: 0}, {Pods: 2, Priority: 100}},
		Queue: v1alpha1.QueuePosition{Position: 2, Waiting: 5, Ahead: []string{"etl"},
			AheadElsewhere: []v1alpha1.QueuedCount{{Priority: 1000, Gangs: 2, Pods: 16}, {Priority: 0, Gangs: 1, Pods: 4}}},
	}
	runsAlone = v1alpha1.WhatIfReviewStatus{
		PodGroup: "solo", MinCount: 1, Pods: 1, Admitted: true, Reason: scheduling.ReasonGangFits,
		Placements: []v1alpha1.WhatIfPlacement{{Pod: "solo", Node: "node-3"}},
		Queue:      v1alpha1.QueuePosition{Position: 1, Waiting: 1},
	}
	// runsFromTemplates answers for team-a's PodGroup llm of jobSetLLM.
	runsFromTemplates = v1alpha1.WhatIfReviewStatus{
		PodGroup: "llm", MinCount: 4, Pods: 4, Admitted: true, Reason: scheduling.ReasonGangFits,
		Placements: []v1alpha1.WhatIfPlacement{{Pod: "llm-leader-0", Node: "node-1"}, {Pod: "llm-worker-0", Node: "node-2"}, {Pod: "llm-worker-1", Node: "node-2"}, {Pod: "llm-worker-2", Node: "node-2"}},
		Queue:      v1alpha1.QueuePosition{Position: 1, Waiting: 1},
	}
	sparkWaits = v1alpha1.WhatIfReviewStatus{
		PodGroup: "spark", MinCount: 5, Pods: 1, Reason: scheduling.ReasonInsufficientCapacity,
		Message: "1 pod requesting cpu 1 and 4 created later requesting cpu 4 each, 3 fit",
		Queue:   v1alpha1.QueuePosition{Position: 1, Waiting: 1},
	}
	waits = v1alpha1.WhatIfReviewStatus{
		PodGroup: "sweep", MinCount: 2, Pods: 2, Reason: scheduling.ReasonInsufficientCapacity,
		Message:    "2 pods requesting cpu 8 each, 1 fits",
		Autoscaler: &v1alpha1.WhatIfAutoscaler{Ask: true, Pods: 2, Message: "a ProvisioningRequest for 2 pods"},
		Queue:      v1alpha1.QueuePosition{Position: 3, Waiting: 3, Ahead: []string{"a", "b"}},
	}
)

// answer is what the fake server says to one review.
type answer struct {
	status v1alpha1.WhatIfReviewStatus
	err    error
}

func TestWhatIf(t *testing.T) {
	tests := []struct {
		name string
		// files are written and passed as -f in order; "-" is stdin.
		files             []string
		stdin             string
		namespace         string
		explicitNamespace bool
		output            string
		answers           []answer
		// wantRequests says what each review carried: its namespace, the
		// kinds and names in spec.object, and spec.podGroup.
		wantRequests []string
		wantOut      string
		wantIn       []string
		wantWarnings []string
		// wantNotWarned must not be in stderr.
		wantNotWarned []string
		wantErr       string
	}{{
		name:         "a Job pairs with the PodGroup of another file that its pod template names, in the context's namespace",
		files:        []string{podGroupTrain, jobTrain},
		namespace:    "team-a",
		answers:      []answer{{status: runs}},
		wantRequests: []string{"team-a: Job train; podGroup team-a/train"},
		wantOut: `Workload:          Job train
Namespace:         team-a
Verdict:           Would run now
PodGroup:          train (from the file): minCount 4, 4 pods, priority 1000
Topology domain:   topology.example.com/rack=rack-1
Placements:
  POD       NODE
  train-0   node-1
  train-1   node-1
  train-2   node-2
  train-3   node-2
Queue:   position 1 of 1, first
`,
		wantWarnings: []string{"Warning: skipping ConfigMap team-a/settings from "},
	}, {
		name:      "a JobSet in its own namespace pairs with the PodGroup of that namespace only, and would preempt; the other, which nothing names, is asked about alone",
		files:     []string{jobSetLLM},
		namespace: "team-a",
		answers:   []answer{{status: preempts}, {status: runsFromTemplates}},
		wantRequests: []string{
			"team-b: JobSet llm; podGroup team-b/llm",
			"team-a: no object; podGroup team-a/llm",
		},
		wantOut: `Workload:    JobSet llm
Namespace:   team-b
Verdict:     Would preempt
             preempts 2 gangs of lower priority to fit
PodGroup:    llm (from the file): minCount 4, 4 pods, priority 1000
Placements:
  POD              NODE
  llm-leader-0-0   node-1
  llm-worker-0-0   node-1
  llm-worker-0-1   node-2
  llm-worker-0-2   node-2
Preemptions:
  GANG                                      PODS   PRIORITY
  team-b/batch-7                            4      0
  <a gang in a namespace you cannot read>   2      100
Queue:   position 2 of 5; ahead: etl in this namespace; 3 gangs elsewhere: 2 at priority 1000 (16 pods), 1 at priority 0 (4 pods)

Workload:    PodGroup llm
Namespace:   team-a
Verdict:     Would run now
PodGroup:    llm (from the file): minCount 4, 4 pods, priority 0
Placements:
  POD            NODE
  llm-leader-0   node-1
  llm-worker-0   node-2
  llm-worker-1   node-2
  llm-worker-2   node-2
Queue:   position 1 of 1, first
`,
		wantNotWarned: []string{"skipping PodGroup"},
	}, {
		name:      "a PodGroup that no workload names is a review of its own, spec.podGroup without spec.object, in the order of the files",
		files:     []string{podGroupSpark, podGroupTrain, jobTrain},
		namespace: "team-a",
		answers:   []answer{{status: sparkWaits}, {status: runs}},
		wantRequests: []string{
			"team-a: no object; podGroup team-a/spark",
			"team-a: Job train; podGroup team-a/train",
		},
		wantIn: []string{`Workload:    PodGroup spark
Namespace:   team-a
Verdict:     Waits: InsufficientCapacity: 1 pod requesting cpu 1 and 4 created later requesting cpu 4 each, 3 fit
PodGroup:    spark (from the file): minCount 5, 1 pod, priority 0
Placements:
  <none>
Queue:   position 1 of 1, first

Workload:          Job train
`},
		wantWarnings:  []string{"Warning: skipping ConfigMap team-a/settings from "},
		wantNotWarned: []string{"skipping PodGroup"},
	}, {
		name:      "pods naming one group are one review, a v1 List; a pod of another group is another; read from stdin",
		files:     []string{"-"},
		stdin:     podsSweep,
		namespace: "team-a",
		answers:   []answer{{status: waits}, {status: runsAlone}},
		wantRequests: []string{
			"team-a: List [Pod sweep-0, Pod sweep-1]; no podGroup",
			"team-a: Pod solo; no podGroup",
		},
		wantOut: `Workload:    Pods sweep-0, sweep-1
Namespace:   team-a
Verdict:     Waits: InsufficientCapacity: 2 pods requesting cpu 8 each, 1 fits
PodGroup:    sweep: minCount 2, 2 pods, priority 0
Placements:
  <none>
Autoscaler:   would ask for room for 2 pods: a ProvisioningRequest for 2 pods
Queue:        position 3 of 3; ahead: a, b in this namespace

Workload:    Pod solo
Namespace:   team-a
Verdict:     Would run now
PodGroup:    solo: minCount 1, 1 pod, priority 0
Placements:
  POD    NODE
  solo   node-3
Queue:   position 1 of 1, first
`,
		wantWarnings: []string{"Warning: skipping Deployment team-a/web from STDIN"},
	}, {
		name:              "-n names the namespace of objects that name none, and may not be contradicted",
		files:             []string{jobSetLLM},
		namespace:         "team-a",
		explicitNamespace: true,
		wantErr:           `the namespace from the provided object "team-b" does not match the namespace "team-a"`,
	}, {
		name:      "a JobSet whose jobs name two groups is not one gang",
		files:     []string{strings.Replace(jobSetLLM, "{scheduling.muster.dev/pod-group: llm, scheduling.muster.dev/role: worker}", "{scheduling.muster.dev/pod-group: other}", 1)},
		namespace: "team-a",
		wantErr:   "JobSet team-b/llm: its pods name 2 groups (llm, other)",
	}, {
		name:      "files of other kinds only: nothing to ask",
		files:     []string{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n"},
		namespace: "team-a",
		wantErr:   "no Job, JobSet, Pod or PodGroup in",
	}, {
		name:      "a review the server refuses does not stop the next",
		files:     []string{jobTrain, jobSetLLM},
		namespace: "team-a",
		answers: []answer{
			{err: apierrors.NewForbidden(v1alpha1.Resource("whatifreviews"), "", fmt.Errorf("no"))},
			{status: preempts},
			{status: runsFromTemplates},
		},
		wantRequests: []string{"team-a: Job train; no podGroup", "team-b: JobSet llm; podGroup team-b/llm", "team-a: no object; podGroup team-a/llm"},
		wantIn:       []string{"Workload:    JobSet llm", "Would preempt", "Workload:    PodGroup llm"},
		wantErr:      "Job train in team-a: whatifreviews.scheduling.muster.dev is forbidden",
	}, {
		name:         "-o yaml prints the review the server returns",
		files:        []string{podGroupTrain, jobTrain},
		namespace:    "team-a",
		output:       "yaml",
		answers:      []answer{{status: runs}},
		wantRequests: []string{"team-a: Job train; podGroup team-a/train"},
		wantIn:       []string{"apiVersion: scheduling.muster.dev/v1alpha1\nkind: WhatIfReview\n", "  admitted: true\n", "  - node: node-2\n    pod: train-3\n", "    kind: Job\n"},
	}, {
		name:      "-o json prints several reviews as a v1 List",
		files:     []string{"-"},
		stdin:     podsSweep,
		namespace: "team-a",
		output:    "json",
		answers:   []answer{{status: waits}, {status: runsAlone}},
		wantRequests: []string{
			"team-a: List [Pod sweep-0, Pod sweep-1]; no podGroup",
			"team-a: Pod solo; no podGroup",
		},
		wantIn: []string{`"kind": "List"`, `"kind": "WhatIfReview"`, `"podGroup": "sweep"`, `"admitted": true`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var filenames []string
			for i, content := range tt.files {
				if content == "-" {
					filenames = append(filenames, "-")
					continue
				}
				name := filepath.Join(dir, fmt.Sprintf("%d.yaml", i))
				if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
				filenames = append(filenames, name)
			}
			muster := musterfake.NewSimpleClientset()
			var requests []string
			muster.PrependReactor("create", "whatifreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
				r := a.(k8stesting.CreateAction).GetObject().(*v1alpha1.WhatIfReview).DeepCopy()
				if r.Namespace != a.GetNamespace() {
					t.Errorf("review of namespace %q sent to %q", r.Namespace, a.GetNamespace())
				}
				requests = append(requests, requestOf(t, r))
				if len(requests) > len(tt.answers) {
					t.Fatalf("review %d unexpected: %s", len(requests), requests[len(requests)-1])
				}
				ans := tt.answers[len(requests)-1]
				if ans.err != nil {
					return true, nil, ans.err
				}
				r.Status = ans.status
				return true, r, nil
			})
			streams, in, out, errOut := genericiooptions.NewTestIOStreams()
			in.WriteString(tt.stdin)
			printFlags := genericclioptions.NewPrintFlags("")
			*printFlags.OutputFormat = tt.output
			o, err := newOutput(printFlags)
			if err != nil {
				t.Fatal(err)
			}
			c := &clients{kube: kubefake.NewClientset(), muster: muster, namespace: tt.namespace, explicitNamespace: tt.explicitNamespace}

			err = whatIf(context.Background(), c, filenames, o, streams)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("whatIf: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("whatIf error %v, want one saying %q", err, tt.wantErr)
			}
			if got, want := strings.Join(requests, "\n"), strings.Join(tt.wantRequests, "\n"); got != want {
				t.Errorf("reviews sent:\n%s\nwant:\n%s", got, want)
			}
			if tt.wantOut != "" && out.String() != tt.wantOut {
				t.Errorf("output:\n%s\nwant:\n%s", out, tt.wantOut)
			}
			for _, want := range tt.wantIn {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output:\n%s\nwant it to hold %q", out, want)
				}
			}
			for _, want := range tt.wantWarnings {
				if !strings.Contains(errOut.String(), want) {
					t.Errorf("stderr:\n%s\nwant it to hold %q", errOut, want)
				}
			}
			for _, not := range tt.wantNotWarned {
				if strings.Contains(errOut.String(), not) {
					t.Errorf("stderr:\n%s\nwant it not to hold %q", errOut, not)
				}
			}
		})
	}
}

// requestOf says what a review carries: "team-a: Job train; podGroup
// team-a/train", or for a List, the kinds and names of its items, or "no
// object".
func requestOf(t *testing.T, r *v1alpha1.WhatIfReview) string {
	t.Helper()
	type object struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Items []object `json:"items"`
	}
	var o object
	s := r.Namespace + ": "
	if raw := r.Spec.Object.Raw; len(raw) == 0 && r.Spec.Object.Object == nil {
		s += "no object"
	} else if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatalf("spec.object: %v", err)
	} else {
		s += o.Kind
	}
	switch {
	case o.Kind == "":
	case o.Kind == "List":
		var items []string
		for _, i := range o.Items {
			items = append(items, i.Kind+" "+i.Metadata.Name)
		}
		s += " [" + strings.Join(items, ", ") + "]"
	default:
		s += " " + o.Metadata.Name
	}
	if pg := r.Spec.PodGroup; pg != nil {
		return s + "; podGroup " + pg.Namespace + "/" + pg.Name
	}
	return s + "; no podGroup"
}
