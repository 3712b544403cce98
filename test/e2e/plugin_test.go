package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/test/cluster"
)

// kubectlMuster runs kubectl with the admin kubeconfig and bin/ first on
// PATH, so that kubectl finds the plugin kubectl-muster there as a user's
// kubectl finds it: `kubectl muster ARGS`.
func kubectlMuster(ctx context.Context, t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin, err := cluster.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(cluster.DefaultMusterBinary(bin))
	if _, err := os.Stat(filepath.Join(dir, "kubectl-muster")); err != nil {
		t.Fatalf("the plugin is not built beside muster-apiserver (make build): %v", err)
	}
	// kubectl passes a plugin the arguments after its name and its own
	// environment, not its flags: the kubeconfig goes in KUBECONFIG.
	cmd := exec.CommandContext(ctx, env.Binary(cluster.KubectlBinary), append([]string{"muster"}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+env.Kubeconfig)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestPluginExplainAndTop: kubectl muster explain says why a gang waits and
// what would let it run, and where an admitted one runs; kubectl muster
// top counts the gangs of each state with what they hold and wait for; a
// wrong resource is refused with what explain takes.
func TestPluginExplainAndTop(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	nodes := poolNodes(t, ctx, ns, 2, "32", nil)
	createGang(t, ctx, ns, "runs", 2, "10", "")
	waitBound(t, ctx, ns, "runs", 2)
	createGang(t, ctx, ns, "waits", 2, "30", "")
	waitAdmitted(t, ctx, ns, "waits", metav1.ConditionFalse, scheduling.ReasonInsufficientCapacity)
	// The Waiting event is recorded a moment after the condition.
	var waiting string
	err := wait.PollUntilContextTimeout(ctx, pollInterval, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		waiting, err = kubectlMuster(ctx, t, "explain", "pg", "waits", "-n", ns)
		if err != nil {
			waiting += "\n" + err.Error()
			return false, nil
		}
		return regexp.MustCompile(`(?m)^\s+Normal\s+Waiting\s`).MatchString(waiting), nil
	})
	if err != nil {
		t.Fatalf("explain pg waits never showed its Waiting event: %v; last output:\n%s", err, waiting)
	}
	expectLines(t, "explain pg waits", waiting,
		`(?m)^Name:\s+waits$`,
		`(?m)^Gang:\s+minCount 2, admitted all at once$`,
		`(?m)^Admitted:\s+False, InsufficientCapacity, for \S+$`,
		`(?m)^\s+needs 2 pods placed at once.*2 pods requesting cpu 30 each`,
		`(?m)^What would let it run:\s+room: it is admitted whole once what the message names is free`,
		`(?m)^\s+waits-0\s+Pending\s+true\s+<waiting>$`,
		`(?m)^\s+Normal\s+Waiting\s+.*needs 2 pods placed at once`,
	)

	running, err := kubectlMuster(ctx, t, "explain", "podgroup/runs", "-n", ns)
	if err != nil {
		t.Fatalf("explain podgroup/runs: %v: %s", err, running)
	}
	nodeAlt := strings.Join([]string{regexp.QuoteMeta(nodes[0]), regexp.QuoteMeta(nodes[1])}, "|")
	expectLines(t, "explain podgroup/runs", running,
		`(?m)^Admitted:\s+True, GangFits, for \S+$`,
		`(?m)^What would let it run:\s+nothing: it is admitted$`,
		`(?m)^\s+runs-0\s+\w+\s+false\s+(`+nodeAlt+`)$`,
		`(?m)^\s+runs-1\s+\w+\s+false\s+(`+nodeAlt+`)$`,
	)

	table, err := kubectlMuster(ctx, t, "top", "-n", ns)
	if err != nil {
		t.Fatalf("top: %v: %s", err, table)
	}
	expectLines(t, "top", table,
		`(?m)^STATE\s+GROUPS\s+PODS\s+HOLDS\s+WAITS FOR$`,
		`(?m)^Admitted\s+1\s+2\s+cpu 20\s+-$`,
		`(?m)^Waiting: InsufficientCapacity\s+1\s+2\s+-\s+cpu 60$`,
	)
	everywhere, err := kubectlMuster(ctx, t, "top", "-A")
	if err != nil {
		t.Fatalf("top -A: %v: %s", err, everywhere)
	}
	expectLines(t, "top -A", everywhere,
		`(?m)^NAMESPACE\s+STATE\s+GROUPS`,
		`(?m)^`+regexp.QuoteMeta(ns)+`\s+Admitted\s+1\s+2\s+cpu 20\s+-$`,
	)

	wrong, err := kubectlMuster(ctx, t, "explain", "pod", "runs-0", "-n", ns)
	if err == nil || !strings.Contains(wrong, `explain takes a PodGroup (pg NAME, or pg/NAME), not "pod"`) {
		t.Errorf("explain pod runs-0: %v, %q; want a refusal naming what explain takes", err, wrong)
	}
	t.Logf("kubectl muster explain pg waits:\n%s\nkubectl muster top:\n%s", waiting, table)
}

// expectLines fails the test for each pattern out does not match.
func expectLines(t *testing.T, what, out string, patterns ...string) {
	t.Helper()
	for _, p := range patterns {
		if !regexp.MustCompile(p).MatchString(out) {
			t.Errorf("%s: no line matches %s in:\n%s", what, p, out)
		}
	}
}

// TestPluginWhatIfAndQueue: kubectl muster whatif -f reads a Job from a
// file and says where its gang would run, pod by pod; kubectl muster queue
// lists the gang that waits with why, and explain gives its place in the
// queue.
func TestPluginWhatIfAndQueue(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	nodes := poolNodes(t, ctx, ns, 2, "32", nil)
	job := `apiVersion: batch/v1
kind: Job
metadata: {name: plug-job}
spec:
  completions: 2
  parallelism: 2
  completionMode: Indexed
  template:
    metadata:
      labels: {scheduling.muster.dev/pod-group: plug-job}
      annotations: {scheduling.muster.dev/group-by: instance}
    spec:
      restartPolicy: Never
      nodeSelector: {` + poolKey + `: ` + ns + `}
      tolerations: [{key: ` + poolKey + `, operator: Equal, value: ` + ns + `, effect: NoSchedule}]
      containers: [{name: main, image: registry.k8s.io/pause:3.10, resources: {requests: {cpu: "20"}}}]
`
	file := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(file, []byte(job), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := kubectlMuster(ctx, t, "whatif", "-f", file, "-n", ns)
	if err != nil {
		t.Fatalf("whatif -f job.yaml: %v: %s", err, out)
	}
	nodeAlt := strings.Join([]string{regexp.QuoteMeta(nodes[0]), regexp.QuoteMeta(nodes[1])}, "|")
	expectLines(t, "whatif -f job.yaml", out,
		`(?m)^Workload:\s+Job plug-job$`,
		`(?m)^Verdict:\s+Would run now$`,
		`(?m)^PodGroup:\s+plug-job: minCount 2, 2 pods, priority 0$`,
		`(?m)^\s+plug-job-0\s+(`+nodeAlt+`)$`,
		`(?m)^\s+plug-job-1\s+(`+nodeAlt+`)$`,
	)

	createGang(t, ctx, ns, "holds", 2, "20", "")
	waitBound(t, ctx, ns, "holds", 2)
	createGang(t, ctx, ns, "waits", 2, "20", "")
	waitAdmitted(t, ctx, ns, "waits", metav1.ConditionFalse, scheduling.ReasonInsufficientCapacity)
	var queue string
	waitFor(t, ctx, "waits in kubectl muster queue", func(ctx context.Context) (bool, error) {
		queue, err = kubectlMuster(ctx, t, "queue", "-n", ns)
		return err == nil && strings.Contains(queue, "InsufficientCapacity"), nil
	})
	expectLines(t, "queue", queue,
		`(?m)^POSITION\s+NAME\s+PRIORITY\s+PODS\s+MINCOUNT\s+NEEDS\s+WAITING\s+REASON$`,
		`(?m)^\d+/\d+\s+waits\s+0\s+2\s+2\s+cpu 40\s+\S+\s+InsufficientCapacity$`,
	)
	explain, err := kubectlMuster(ctx, t, "explain", "pg", "waits", "-n", ns)
	if err != nil {
		t.Fatalf("explain pg waits: %v: %s", err, explain)
	}
	expectLines(t, "explain pg waits", explain, `(?m)^Queue:\s+position \d+ of \d+`)
	t.Logf("kubectl muster whatif -f job.yaml:\n%s\nkubectl muster queue:\n%s", out, queue)
}
