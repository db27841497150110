// Package hostile schedules malformed and hostile pods (bad traceparent
// annotations, a thousand containers, names at the API's length limits,
// unicode wherever the API accepts it, annotations close to their 256 KiB
// limit) with plain kube-scheduler and then with schedscope-scheduler, and
// checks that schedscope binds or rejects every pod as plain kube-scheduler
// does, that its records and spans stay bounded in size whatever the pods
// carry, that malformed traceparents are counted, and that it does not panic.
package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/schedscope/schedscope/pkg/record"
	"github.com/schedscope/schedscope/pkg/scheduler/tracing"
	"github.com/schedscope/schedscope/test/framework"
)

const profile = "hostile"

// config is the upstream default profile; both schedulers run it.
const config = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: hostile
`

// Bounds on what schedscope emits for one attempt.
const (
	// maxRecordBytes bounds the JSON of one record. A record names the pod
	// and carries the verdicts and scores on the four nodes of this test; it
	// copies none of the pod's annotations (up to 256 KiB here) or
	// containers (1000 here), and cuts the plugins' messages and reasons
	// (record.MaxTextBytes, record.MaxReasons). The largest record here is
	// about 10 KiB: the pod with a thousand extended resources.
	maxRecordBytes = 16 << 10
	// maxSpanBytes bounds one exported span, protobuf-encoded: a few
	// dozen attributes and events whose strings are each cut to
	// tracing.MaxAttributeLength. Far below the 256 KiB of annotations a pod
	// may carry.
	maxSpanBytes = 32 << 10
)

// Markers in pod data that no record or span may contain: the content of
// the huge annotations, the names of the thousand containers, and the tail
// of the over-long traceparent.
const (
	annotationMarker  = "hostile-annotation-content"
	containerMarker   = "hostile-container"
	traceparentMarker = "hostile-traceparent-tail"
)

// validTraceparent is a well-formed W3C traceparent.
const (
	validTraceID     = "4bf92f3577b34da6a3ce929d0e0e4736"
	validSpanID      = "00f067aa0ba902b7"
	validTraceparent = "00-" + validTraceID + "-" + validSpanID + "-01"
)

// malformedTraceparents are the traceparent annotations schedscope must
// ignore and count.
var malformedTraceparents = map[string]string{
	"garbage":       "not a traceparent at all",
	"version-ff":    "ff-" + validTraceID + "-" + validSpanID + "-01",
	"zero-trace-id": "00-" + strings.Repeat("0", 32) + "-" + validSpanID + "-01",
	"zero-span-id":  "00-" + validTraceID + "-" + strings.Repeat("0", 16) + "-01",
	"too-long":      validTraceparent + "-" + traceparentMarker + strings.Repeat("-0123456789abcdef", 4096),
	"unicode":       "00-4bf92f3577b34da6a3ce929d0e0e47\u00fc6-00f067aa0ba902b7-01",
}

// pad returns prefix padded with "x" to n bytes, a valid DNS label when
// prefix is lowercase alphanumerics and dashes.
func pad(prefix string, n int) string {
	return prefix + strings.Repeat("x", n-len(prefix))
}

// subdomain returns a DNS subdomain of exactly 253 bytes, the longest the
// API accepts for node names, pod names and label key prefixes.
func subdomain(prefix string) string {
	return pad(prefix, 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61)
}

// Names and labels at the API's length limits.
var (
	namespace = pad("hostile-namespace-", 63)
	// longKey is a label key of the longest prefix and the longest name.
	longKey    = subdomain("hostile-label-prefix") + "/" + pad("hostile-label-name-", 63)
	taintKey   = subdomain("hostile-taint-prefix") + "/" + pad("hostile-taint-name-", 63)
	taintValue = pad("hostile-taint-value-", 63)

	nodeA     = pad("hostile-node-a-", 63)
	nodeB     = pad("hostile-node-b-", 63)
	nodeLong  = subdomain("hostile-node-long")
	nodeSmall = "hostile-small"
	// valueOf is each node's value of longKey.
	valueOf = map[string]string{
		nodeA:     pad("hostile-value-a-", 63),
		nodeB:     pad("hostile-value-b-", 63),
		nodeLong:  pad("hostile-value-long-", 63),
		nodeSmall: pad("hostile-value-small-", 63),
	}
)

// outcome is what a scheduler made of a pod: the node it is bound to, or
// the reason and message of its PodScheduled=False condition.
type outcome struct {
	Node    string
	Reason  string
	Message string
}

// hostilePod is a pod of the test and what the design expects of it.
type hostilePod struct {
	pod *v1.Pod
	// node is the node the pod must be bound to; "*" for any node, "" for
	// none, in which case reason is the PodScheduled reason it must get.
	node   string
	reason string
}

func TestHostilePods(t *testing.T) {
	ctx := context.Background()
	cp := framework.StartTestControlPlane(t)
	client := cp.Client
	createNodes(t, cp)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectRejectedByAPI(t, cp)

	pods := hostilePods()
	malformed := 0
	for _, p := range pods {
		if v, ok := p.pod.Annotations[tracing.TraceparentAnnotation]; ok && v != validTraceparent {
			malformed++
		}
	}

	// Pods are created one at a time, each once the one before is bound or
	// has its PodScheduled=False condition, so that both schedulers decide
	// the same pods in the same order on the same cluster state.
	runWith := func(binary string, extra ...string) (map[string]outcome, *framework.Scheduler) {
		s, err := cp.StartScheduler(ctx, binary, binary, config, extra...)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]outcome{}
		for _, p := range pods {
			if _, err := client.CoreV1().Pods(namespace).Create(ctx, p.pod.DeepCopy(), metav1.CreateOptions{}); err != nil {
				s.Stop()
				t.Fatalf("creating pod %s: %v", short(p.pod.Name), err)
			}
			o, err := waitForOutcome(ctx, cp, p.pod.Name)
			if err != nil {
				s.Stop()
				t.Fatalf("%s: pod %s: %v\n%s", binary, short(p.pod.Name), err, s.Tail())
			}
			got[p.pod.Name] = o
		}
		return got, s
	}

	start := time.Now()
	plain, plainScheduler := runWith("kube-scheduler")
	plainScheduler.Stop()
	expectNoPanic(t, plainScheduler.Process)
	for _, p := range pods {
		o := plain[p.pod.Name]
		switch {
		case p.node == "*" && o.Node == "", p.node != "*" && o.Node != p.node, p.node == "" && o.Reason != p.reason:
			t.Errorf("kube-scheduler: pod %s: got %+v, the test expects node %q or reason %q", short(p.pod.Name), abbreviate(o), short(p.node), p.reason)
		}
	}
	if err := framework.DeletePods(ctx, client, namespace); err != nil {
		t.Fatal(err)
	}

	receiver, err := framework.StartOTLPReceiver()
	if err != nil {
		t.Fatal(err)
	}
	defer receiver.Stop()
	tracingConfig := cp.Dir + "/tracing.yaml"
	if err := os.WriteFile(tracingConfig, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: "+receiver.Addr+"\nsamplingRatePerMillion: 1000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	observed, sched := runWith("schedscope-scheduler", "--tracing-config-file="+tracingConfig)
	defer sched.Stop()
	t.Logf("scheduled %d pods with each scheduler in %s", len(pods), time.Since(start).Round(time.Millisecond))
	for _, p := range pods {
		o := observed[p.pod.Name]
		if p.node == "*" && o.Node != "" && plain[p.pod.Name].Node != "" {
			// kube-scheduler picks at random among the nodes of the highest
			// score (selectHost), and for this test's small pods nodes A
			// and long score alike (NodeResourcesFit 98, balanced
			// allocation 99): a pod that may go to any node must be bound
			// by both schedulers, not necessarily to the same node.
			o.Node = plain[p.pod.Name].Node
		}
		if diff := cmp.Diff(plain[p.pod.Name], o); diff != "" {
			t.Errorf("pod %s: outcome differs (-kube-scheduler +schedscope-scheduler):\n%s", short(p.pod.Name), diff)
		}
	}

	records := waitForRecords(t, sched, pods, observed)
	checkRecords(t, records)
	checkTraceparents(t, records, malformed, sched)
	if sched.Exited() {
		t.Fatalf("schedscope-scheduler exited: %v\n%s", sched.Wait(0), sched.Tail())
	}
	// Stopping the scheduler flushes its spans to the receiver.
	sched.Stop()
	expectNoPanic(t, sched.Process)
	checkSpans(t, receiver, records)
}

// createNodes creates four nodes of differing sizes: two with 63-byte
// names, one with a 253-byte name, one tainted with a key and value at
// their length limits; each has its own value of longKey.
func createNodes(t *testing.T, cp *framework.ControlPlane) {
	t.Helper()
	nodes := []struct {
		name        string
		cpu, memory string
		taints      []v1.Taint
	}{
		{name: nodeA, cpu: "8", memory: "16Gi"},
		{name: nodeB, cpu: "32", memory: "64Gi", taints: []v1.Taint{{Key: taintKey, Value: taintValue, Effect: v1.TaintEffectNoSchedule}}},
		{name: nodeLong, cpu: "4", memory: "8Gi"},
		{name: nodeSmall, cpu: "2", memory: "4Gi"},
	}
	for _, n := range nodes {
		node := &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{longKey: valueOf[n.name]}},
			Spec:       v1.NodeSpec{Taints: n.taints},
		}
		if err := framework.CreateNode(context.Background(), cp.Client, node, v1.ResourceList{
			v1.ResourceCPU: resource.MustParse(n.cpu), v1.ResourceMemory: resource.MustParse(n.memory),
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// unicodeText mixes scripts, emoji, combining marks, a right-to-left
// override, a line separator and control characters.
const unicodeText = "Grüße, 世界! 🚀👩‍💻 ﷽ e\u0301 \u202egnirts desrever\u202c \u2028 \u0000\u0007 \ufeff Ω≈ç√∫"

func podLabels() map[string]string {
	return map[string]string{
		pad("hostile-pod-label-", 63):                       pad("hostile-pod-value-", 63),
		subdomain("hostile-pod-label") + "/" + pad("n", 63): pad("v", 63),
	}
}

// newPod returns a pod of the test profile with labels at their length
// limits and one container with a 63-byte name.
func newPod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: podLabels()},
		Spec: v1.PodSpec{
			SchedulerName: profile,
			Containers: []v1.Container{{Name: pad("main-", 63), Image: framework.PauseImage, Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi"),
			}}}},
		},
	}
}

// containers returns n containers with distinct 63-byte names, each
// requesting cpu and memory.
func containers(n int, cpu, memory string) []v1.Container {
	out := make([]v1.Container, n)
	for i := range out {
		out[i] = v1.Container{
			Name:  pad(fmt.Sprintf("c%04d-%s-", i, containerMarker), 63),
			Image: framework.PauseImage,
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(memory),
			}},
		}
	}
	return out
}

// hugeAnnotations returns annotations, with unicode values, whose keys and
// values add up to size bytes; the API allows 256 KiB in all.
func hugeAnnotations(size int) map[string]string {
	out := map[string]string{}
	key := 0
	for size > 0 {
		k := fmt.Sprintf("hostile.example.com/annotation-%02d", key)
		key++
		chunk := min(size-len(k), 64<<10)
		v := annotationMarker + " " + unicodeText
		for len(v) < chunk {
			v += " " + unicodeText
		}
		v = strings.ToValidUTF8(v[:chunk], "")
		for len(v) < chunk {
			v += "."
		}
		out[k] = v
		size -= len(k) + len(v)
	}
	return out
}

// hostilePods returns the pods of the test, in the order they are created.
func hostilePods() []hostilePod {
	var pods []hostilePod
	for _, name := range []string{"garbage", "version-ff", "zero-trace-id", "zero-span-id", "too-long", "unicode"} {
		p := newPod("traceparent-" + name)
		p.Annotations = map[string]string{tracing.TraceparentAnnotation: malformedTraceparents[name]}
		pods = append(pods, hostilePod{pod: p, node: "*"})
	}
	valid := newPod("traceparent-valid")
	valid.Annotations = map[string]string{tracing.TraceparentAnnotation: validTraceparent}
	pods = append(pods, hostilePod{pod: valid, node: "*"})

	// A thousand containers: 1 CPU and 1000 MiB in all fit several nodes;
	// 100 CPUs fit none.
	fit := newPod("containers-1000-fit")
	fit.Spec.Containers = containers(1000, "1m", "1Mi")
	pods = append(pods, hostilePod{pod: fit, node: "*"})
	tooBig := newPod("containers-1000-too-big")
	tooBig.Spec.Containers = containers(1000, "100m", "1Mi")
	pods = append(pods, hostilePod{pod: tooBig, reason: v1.PodReasonUnschedulable})

	// The longest pod name, bound by a node selector and a required node
	// affinity on a label key and value at their length limits.
	selected := newPod(subdomain("hostile-pod-long"))
	selected.Spec.NodeSelector = map[string]string{longKey: valueOf[nodeA]}
	selected.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
		NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: longKey, Operator: v1.NodeSelectorOpIn, Values: []string{valueOf[nodeA], valueOf[nodeLong]}}}}},
	}}}
	pods = append(pods, hostilePod{pod: selected, node: nodeA})

	// The tainted node, with and without a toleration of its long taint.
	tolerated := newPod("long-taint-tolerated")
	tolerated.Spec.NodeSelector = map[string]string{longKey: valueOf[nodeB]}
	tolerated.Spec.Tolerations = []v1.Toleration{{Key: taintKey, Operator: v1.TolerationOpEqual, Value: taintValue, Effect: v1.TaintEffectNoSchedule}}
	pods = append(pods, hostilePod{pod: tolerated, node: nodeB})
	untolerated := newPod("long-taint-untolerated")
	untolerated.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
		NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: longKey, Operator: v1.NodeSelectorOpIn, Values: []string{valueOf[nodeB]}}}}},
	}}}
	pods = append(pods, hostilePod{pod: untolerated, reason: v1.PodReasonUnschedulable})

	// A required term on the long key that matches no node.
	nothing := newPod("affinity-matches-nothing")
	nothing.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
		NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: longKey, Operator: v1.NodeSelectorOpIn, Values: []string{pad("hostile-value-none-", 63)}}}}},
	}}}
	pods = append(pods, hostilePod{pod: nothing, reason: v1.PodReasonUnschedulable})

	// Unicode wherever the API takes it: annotations, image, command,
	// environment.
	uni := newPod("unicode")
	uni.Annotations = map[string]string{"hostile.example.com/unicode": unicodeText, "hostile.example.com/" + pad("k", 63): strings.Repeat("🚀", 1000)}
	uni.Spec.Containers[0].Image = "registry.example.com/ïmage-" + "🚀" + ":ṫag"
	uni.Spec.Containers[0].Command = []string{unicodeText}
	uni.Spec.Containers[0].Env = []v1.EnvVar{{Name: "HOSTILE", Value: unicodeText}}
	pods = append(pods, hostilePod{pod: uni, node: "*"})

	// Annotations just under the API's 256 KiB limit.
	huge := newPod("huge-annotations")
	huge.Annotations = hugeAnnotations(256<<10 - 1024)
	pods = append(pods, hostilePod{pod: huge, node: "*"})

	// Everything at once: the longest names, a thousand containers, huge
	// annotations and a malformed traceparent.
	all := newPod(subdomain("hostile-pod-all"))
	all.Spec.Containers = containers(1000, "1m", "1Mi")
	all.Annotations = hugeAnnotations(256<<10 - 1024 - len(malformedTraceparents["too-long"]) - len(tracing.TraceparentAnnotation))
	all.Annotations[tracing.TraceparentAnnotation] = malformedTraceparents["too-long"]
	all.Spec.NodeSelector = map[string]string{longKey: valueOf[nodeB]}
	all.Spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpExists}}
	pods = append(pods, hostilePod{pod: all, node: nodeB})

	// Pod data that reaches the scheduler's messages. A preferred node
	// affinity term is not validated by the API: a unicode value of 20 KB
	// passes, and NodeAffinity's PreScore fails on it with an error that
	// quotes it. A thousand extended resources, none offered by any node,
	// give a thousand "Insufficient" reasons per node.
	preferred := newPod("preferred-affinity-invalid-value")
	preferred.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{
		Weight:     1,
		Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: longKey, Operator: v1.NodeSelectorOpIn, Values: []string{strings.Repeat("🚀", 5000)}}}},
	}}}}
	pods = append(pods, hostilePod{pod: preferred, reason: v1.PodReasonSchedulerError})
	extended := newPod("extended-resources-1000")
	extended.Spec.Containers = containers(1000, "1m", "1Mi")
	for i := range extended.Spec.Containers {
		r := v1.ResourceName("hostile.example.com/" + pad(fmt.Sprintf("r%04d-", i), 63))
		extended.Spec.Containers[i].Resources.Requests[r] = resource.MustParse("1")
		extended.Spec.Containers[i].Resources.Limits = v1.ResourceList{r: resource.MustParse("1")}
	}
	pods = append(pods, hostilePod{pod: extended, reason: v1.PodReasonUnschedulable})
	return pods
}

// expectRejectedByAPI checks that kube-apiserver refuses what it must: a
// unicode label value, a unicode value in a required node affinity term,
// a 64-byte container name, annotations over 256 KiB. Keeping such data
// away from schedulers is the API's job; the test relies on it.
func expectRejectedByAPI(t *testing.T, cp *framework.ControlPlane) {
	t.Helper()
	cases := map[string]func(*v1.Pod){
		"unicode label value": func(p *v1.Pod) { p.Labels["hostile"] = "wert-ü" },
		"unicode required node affinity value": func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
				NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "hostile", Operator: v1.NodeSelectorOpIn, Values: []string{"zoné-🚀"}}}}},
			}}}
		},
		"64-byte container name":   func(p *v1.Pod) { p.Spec.Containers[0].Name = pad("c-", 64) },
		"annotations over 256 KiB": func(p *v1.Pod) { p.Annotations = hugeAnnotations(256<<10 + 1) },
	}
	for name, mutate := range cases {
		p := newPod("rejected")
		mutate(p)
		_, err := cp.Client.CoreV1().Pods(namespace).Create(context.Background(), p, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Errorf("creating a pod with %s: got error %v, want Invalid", name, err)
		}
	}
}

// waitForOutcome waits until pod name is bound or has a PodScheduled=False
// condition, and returns what became of it.
func waitForOutcome(ctx context.Context, cp *framework.ControlPlane, name string) (outcome, error) {
	var o outcome
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Spec.NodeName != "" {
			o = outcome{Node: p.Spec.NodeName}
			return true, nil
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
				o = outcome{Reason: c.Reason, Message: c.Message}
				return true, nil
			}
		}
		return false, nil
	})
	return o, err
}

// streamRecord is a record of the record stream, decoded, with its trace
// and its JSON as the stream served them.
type streamRecord struct {
	*record.Attempt
	TraceID string
	raw     []byte
}

// listRawRecords reads every buffered record of a record stream, keeping
// each one's JSON.
func listRawRecords(url string) ([]streamRecord, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var l struct {
		Items []struct {
			TraceID string          `json:"traceID"`
			Object  json.RawMessage `json:"object"`
		} `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		return nil, err
	}
	out := make([]streamRecord, 0, len(l.Items))
	for _, it := range l.Items {
		var a record.Attempt
		if err := json.Unmarshal(it.Object, &a); err != nil {
			return nil, fmt.Errorf("decoding record %s: %w", it.Object[:min(len(it.Object), 200)], err)
		}
		out = append(out, streamRecord{Attempt: &a, TraceID: it.TraceID, raw: it.Object})
	}
	return out, nil
}

// waitForRecords waits until every pod has a record of its outcome:
// scheduled on the node it is bound to, or unschedulable, and returns
// every record of the test's pods.
func waitForRecords(t *testing.T, s *framework.Scheduler, pods []hostilePod, observed map[string]outcome) []streamRecord {
	t.Helper()
	var records []streamRecord
	var missing []string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		all, err := listRawRecords(s.StreamURL)
		if err != nil {
			return false, err
		}
		records = records[:0]
		final := map[string]bool{}
		for _, r := range all {
			if r.Pod.Namespace != namespace {
				continue
			}
			records = append(records, r)
			o := observed[r.Pod.Name]
			if (o.Node != "" && r.Result == record.ResultScheduled && r.SelectedNode == o.Node) ||
				(o.Node == "" && r.Result != record.ResultScheduled) {
				final[r.Pod.Name] = true
			}
		}
		missing = missing[:0]
		for _, p := range pods {
			if !final[p.pod.Name] {
				missing = append(missing, short(p.pod.Name))
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		t.Fatalf("no record of the outcome of pods %v: %v", missing, err)
	}
	return records
}

// checkRecords checks every record is bounded and copies no pod data
// beyond the names that identify the pod.
func checkRecords(t *testing.T, records []streamRecord) {
	t.Helper()
	largest, largestPod := 0, ""
	for _, r := range records {
		if len(r.raw) > largest {
			largest, largestPod = len(r.raw), r.Pod.Name
		}
		if len(r.raw) > maxRecordBytes {
			t.Errorf("record of attempt %d of pod %s is %d bytes, more than %d", r.Attempt.Attempt, short(r.Pod.Name), len(r.raw), maxRecordBytes)
		}
		for _, marker := range []string{annotationMarker, containerMarker, traceparentMarker} {
			if strings.Contains(string(r.raw), marker) {
				t.Errorf("record of pod %s contains pod data %q", short(r.Pod.Name), marker)
			}
		}
	}
	t.Logf("%d records; largest %d bytes (pod %s), bound %d", len(records), largest, short(largestPod), maxRecordBytes)
}

// checkTraceparents checks that the malformed traceparents were counted,
// each pod once, and that the valid one became the parent of its pod's
// attempt.
func checkTraceparents(t *testing.T, records []streamRecord, malformed int, s *framework.Scheduler) {
	t.Helper()
	for _, r := range records {
		// The traceparent is a link: the trace ID is the scheduler's own.
		if r.Pod.Name == "traceparent-valid" && (r.TraceID == "" || r.TraceID == validTraceID) {
			t.Errorf("attempt of the pod with a valid traceparent has trace %q, want one of the scheduler's, not the caller's %s", r.TraceID, validTraceID)
		}
	}
	_, families, err := framework.Scrape(s.MetricsURL)
	if err != nil {
		t.Fatal(err)
	}
	const name = "schedscope_trace_malformed_traceparent_total"
	f, ok := families[name]
	if !ok {
		t.Fatalf("no %s on %s", name, s.MetricsURL)
	}
	if got := framework.Sum(f, nil); got != float64(malformed) {
		t.Errorf("%s = %v, want %d (the pods with a malformed traceparent)", name, got, malformed)
	} else {
		t.Logf("%s = %v for %d pods with a malformed traceparent", name, got, malformed)
	}
	for _, lost := range []string{"schedscope_trace_spans_dropped_total", "schedscope_trace_spans_export_failed_total", "schedscope_record_dropped_total"} {
		if f, ok := families[lost]; !ok {
			t.Errorf("no %s on %s", lost, s.MetricsURL)
		} else if got := framework.Sum(f, nil); got != 0 {
			t.Errorf("%s = %v, want 0", lost, got)
		}
	}
}

// checkSpans checks the spans of every record's trace: each string
// attribute within tracing.MaxAttributeLength bytes, each span within
// maxSpanBytes, and no pod data beyond its names.
func checkSpans(t *testing.T, receiver *framework.OTLPReceiver, records []streamRecord) {
	t.Helper()
	traces := map[string]bool{}
	for _, r := range records {
		if r.TraceID == "" {
			t.Errorf("attempt %d of pod %s was not traced at 100%% sampling", r.Attempt.Attempt, short(r.Pod.Name))
			continue
		}
		traces[r.TraceID] = true
	}
	spans, largestSpan, longestString := 0, 0, 0
	largestName := ""
	for id := range traces {
		trace := receiver.Trace(id)
		if !hasSpan(trace, tracing.SpanAttempt) {
			t.Errorf("trace %s has no %s span among its %d spans", id, tracing.SpanAttempt, len(trace))
		}
		for _, s := range trace {
			spans++
			size := proto.Size(s)
			if size > largestSpan {
				largestSpan, largestName = size, s.Name
			}
			if size > maxSpanBytes {
				t.Errorf("span %s of trace %s is %d bytes, more than %d", s.Name, id, size, maxSpanBytes)
			}
			for _, str := range spanStrings(s) {
				longestString = max(longestString, len(str.value))
				if len(str.value) > tracing.MaxAttributeLength {
					t.Errorf("span %s of trace %s: %s is %d bytes, more than %d", s.Name, id, str.where, len(str.value), tracing.MaxAttributeLength)
				}
				for _, marker := range []string{annotationMarker, containerMarker, traceparentMarker} {
					if strings.Contains(str.value, marker) {
						t.Errorf("span %s of trace %s: %s contains pod data %q", s.Name, id, str.where, marker)
					}
				}
			}
		}
	}
	t.Logf("%d spans in %d traces (receiver has %d); largest span %d bytes (%s), bound %d; longest string %d bytes, bound %d",
		spans, len(traces), receiver.SpanCount(), largestSpan, largestName, maxSpanBytes, longestString, tracing.MaxAttributeLength)
}

func hasSpan(spans []*tracepb.Span, name string) bool {
	for _, s := range spans {
		if s.Name == name {
			return true
		}
	}
	return false
}

// spanString is a string of a span and where it is.
type spanString struct {
	where, value string
}

// spanStrings returns every string a span carries: its status message and
// the string values of its attributes and of its events' and links'
// attributes, including each element of an array.
func spanStrings(s *tracepb.Span) []spanString {
	var out []spanString
	var add func(where string, v *commonpb.AnyValue)
	add = func(where string, v *commonpb.AnyValue) {
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out = append(out, spanString{where, x.StringValue})
		case *commonpb.AnyValue_ArrayValue:
			for i, e := range x.ArrayValue.GetValues() {
				add(fmt.Sprintf("%s[%d]", where, i), e)
			}
		case *commonpb.AnyValue_KvlistValue:
			for _, kv := range x.KvlistValue.GetValues() {
				add(where+"."+kv.Key, kv.Value)
			}
		}
	}
	for _, kv := range s.Attributes {
		add("attribute "+kv.Key, kv.Value)
	}
	for _, e := range s.Events {
		for _, kv := range e.Attributes {
			add("event "+e.Name+" attribute "+kv.Key, kv.Value)
		}
	}
	for _, l := range s.Links {
		for _, kv := range l.Attributes {
			add("link attribute "+kv.Key, kv.Value)
		}
	}
	if s.Status != nil {
		out = append(out, spanString{"status message", s.Status.Message})
	}
	return out
}

// expectNoPanic fails the test if the log of p mentions a panic.
func expectNoPanic(t *testing.T, p *framework.Process) {
	t.Helper()
	log, err := os.ReadFile(p.Log)
	if err != nil {
		t.Fatal(err)
	}
	if i := strings.Index(strings.ToLower(string(log)), "panic"); i >= 0 {
		t.Errorf("the log of %s mentions a panic: %s", p.Name, log[max(0, i-200):min(len(log), i+2000)])
	}
}

// short abbreviates a long name for messages.
func short(name string) string {
	if len(name) <= 40 {
		return name
	}
	return fmt.Sprintf("%s...(%d bytes)", name[:30], len(name))
}

// abbreviate shortens an outcome's node name for messages; messages are
// compared whole.
func abbreviate(o outcome) outcome {
	o.Node = short(o.Node)
	return o
}
