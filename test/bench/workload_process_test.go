//go:build process && !kube1.35

package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/schedscope/schedscope/test/framework"
)

// processWorkload is the cluster an upstream workload builds, read from its
// workload file: the nodes as its node template and label strategy make
// them, the pods created before the measured ones (created bound, spread
// over the nodes in turn, as a default scheduler spreads them) and the
// measured pods (created pending, for the scheduler under test).
type processWorkload struct {
	name       string
	node       *v1.Node
	nodes      int
	labelKey   string
	labelValue []string
	init       []podBatch
	measured   podBatch
	// featureGates are the workload's, as --feature-gates.
	featureGates string
	// schedulerConfig is the KubeSchedulerConfiguration the schedulers
	// run: the test case's, else the default profile's.
	schedulerConfig string
}

// podBatch is count pods of one template. With a signatureBatch, pod i is
// labelled signature=signature-label-<i/signatureBatch>, as scheduler_perf
// labels them, so that that many pods in a row share a batching signature.
type podBatch struct {
	pod            *v1.Pod
	count          int
	signatureBatch int
}

// upstreamTestCase is the part of a scheduler_perf test case the process
// benchmark reads.
type upstreamTestCase struct {
	Name                   string
	DefaultPodTemplatePath *string
	SchedulerConfigPath    *string
	FeatureGates           map[string]bool
	// WorkloadTemplate is read op by op into upstreamOp.
	WorkloadTemplate []map[string]any
	Workloads        []struct {
		Name         string
		FeatureGates map[string]bool
		Params       map[string]any
	}
}

// upstreamOp is an operation of a workload template. The process
// benchmark knows createNodes and createPods with these fields; it refuses
// any other field, whose effect it would miss.
type upstreamOp struct {
	Opcode                   string  `json:"opcode"`
	Count                    int     `json:"count"`
	CountParam               string  `json:"countParam"`
	SignatureBatchSize       int     `json:"signatureBatchSize"`
	SignatureBatchSizeParam  string  `json:"signatureBatchSizeParam"`
	NodeTemplatePath         *string `json:"nodeTemplatePath"`
	PodTemplatePath          *string `json:"podTemplatePath"`
	CollectMetrics           bool    `json:"collectMetrics"`
	LabelNodePrepareStrategy *struct {
		LabelKey    string   `json:"labelKey"`
		LabelValues []string `json:"labelValues"`
	} `json:"labelNodePrepareStrategy"`
}

// loadProcessWorkload reads the workload name ("TestCase/Workload") of an
// upstream workload file; params override the workload's parameters.
func loadProcessWorkload(file, name string, params map[string]int) (*processWorkload, error) {
	caseName, workloadName, ok := strings.Cut(name, "/")
	if !ok {
		return nil, fmt.Errorf("workload %q: want TestCase/Workload", name)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var cases []upstreamTestCase
	if err := yaml.Unmarshal(data, &cases); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	dir := filepath.Dir(file)
	for _, tc := range cases {
		if tc.Name != caseName {
			continue
		}
		schedulerConfig := framework.SchedulerConfig(defaultProfile)
		if tc.SchedulerConfigPath != nil {
			if schedulerConfig, err = readSchedulerConfig(filepath.Join(dir, *tc.SchedulerConfigPath)); err != nil {
				return nil, fmt.Errorf("%s: test case %s: %w", file, caseName, err)
			}
		}
		for _, w := range tc.Workloads {
			if w.Name != workloadName {
				continue
			}
			values := map[string]int{}
			for k, v := range w.Params {
				if n, ok := v.(float64); ok {
					values[k] = int(n)
				}
			}
			for k, v := range params {
				values[k] = v
			}
			gates := map[string]bool{}
			for k, v := range tc.FeatureGates {
				gates[k] = v
			}
			for k, v := range w.FeatureGates {
				gates[k] = v
			}
			pw := &processWorkload{name: name, featureGates: featureGateFlag(gates), schedulerConfig: schedulerConfig}
			for i, raw := range tc.WorkloadTemplate {
				if err := pw.addOp(dir, raw, tc.DefaultPodTemplatePath, values); err != nil {
					return nil, fmt.Errorf("%s: %s operation %d: %w", file, caseName, i, err)
				}
			}
			if pw.node == nil || pw.measured.pod == nil {
				return nil, fmt.Errorf("%s: %s creates no nodes or measures no pods", file, name)
			}
			return pw, nil
		}
	}
	return nil, fmt.Errorf("%s has no workload %s", file, name)
}

// addOp adds an operation of the workload template.
func (pw *processWorkload) addOp(dir string, raw map[string]any, defaultPod *string, params map[string]int) error {
	data, err := yaml.Marshal(raw)
	if err != nil {
		return err
	}
	var op upstreamOp
	if err := yaml.UnmarshalStrict(data, &op); err != nil {
		return fmt.Errorf("not an operation the process benchmark knows: %w", err)
	}
	count, err := paramOr(op.Count, op.CountParam, params)
	if err != nil {
		return err
	}
	signatureBatch, err := paramOr(op.SignatureBatchSize, op.SignatureBatchSizeParam, params)
	if err != nil {
		return err
	}
	switch op.Opcode {
	case "createNodes":
		if pw.node != nil {
			return fmt.Errorf("a second createNodes")
		}
		if op.PodTemplatePath != nil || op.CollectMetrics || signatureBatch != 0 {
			return fmt.Errorf("createNodes with pod fields")
		}
		pw.node, pw.nodes = baseNode(), count
		if op.NodeTemplatePath != nil {
			pw.node = &v1.Node{}
			if err := readTemplate(filepath.Join(dir, *op.NodeTemplatePath), pw.node); err != nil {
				return err
			}
		}
		if s := op.LabelNodePrepareStrategy; s != nil {
			if len(s.LabelValues) == 0 {
				return fmt.Errorf("labelNodePrepareStrategy without labelValues")
			}
			pw.labelKey, pw.labelValue = s.LabelKey, s.LabelValues
		}
	case "createPods":
		if op.NodeTemplatePath != nil || op.LabelNodePrepareStrategy != nil {
			return fmt.Errorf("createPods with node fields")
		}
		path := op.PodTemplatePath
		if path == nil {
			path = defaultPod
		}
		if path == nil {
			return fmt.Errorf("createPods without a pod template")
		}
		b := podBatch{pod: &v1.Pod{}, count: count, signatureBatch: signatureBatch}
		if err := readTemplate(filepath.Join(dir, *path), b.pod); err != nil {
			return err
		}
		if !op.CollectMetrics {
			pw.init = append(pw.init, b)
			return nil
		}
		if pw.measured.pod != nil {
			return fmt.Errorf("a second createPods with collectMetrics")
		}
		pw.measured = b
	default:
		return fmt.Errorf("opcode %q: the process benchmark knows createNodes and createPods", op.Opcode)
	}
	return nil
}

// paramOr is value, or the parameter param ("$name") names if not empty.
func paramOr(value int, param string, params map[string]int) (int, error) {
	if param == "" {
		return value, nil
	}
	n, ok := params[strings.TrimPrefix(param, "$")]
	if !ok {
		return 0, fmt.Errorf("no parameter %s", param)
	}
	return n, nil
}

// readSchedulerConfig reads a test case's KubeSchedulerConfiguration for
// the benchmark's schedulers: its profiles must all be the default
// profile's, which the workloads' pods ask for, and leader election is
// turned off, as in the default configuration.
func readSchedulerConfig(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var config map[string]any
	if err := yaml.Unmarshal(data, &config); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if config["kind"] != "KubeSchedulerConfiguration" {
		return "", fmt.Errorf("%s: kind %v, want KubeSchedulerConfiguration", path, config["kind"])
	}
	if _, ok := config["clientConnection"]; ok {
		return "", fmt.Errorf("%s: sets clientConnection, which the benchmark sets", path)
	}
	profiles, _ := config["profiles"].([]any)
	for i, p := range profiles {
		profile, _ := p.(map[string]any)
		if name, ok := profile["schedulerName"]; ok && name != defaultProfile {
			return "", fmt.Errorf("%s: profile %d is %v; the benchmark schedules the %s profile's pods", path, i, name, defaultProfile)
		}
	}
	config["leaderElection"] = map[string]any{"leaderElect": false}
	out, err := yaml.Marshal(config)
	return string(out), err
}

func readTemplate(path string, obj any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// baseNode is scheduler_perf's node when createNodes names no template
// (its makeBaseNode).
func baseNode() *v1.Node {
	capacity := v1.ResourceList{
		v1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
		v1.ResourceCPU:    resource.MustParse("4"),
		v1.ResourceMemory: resource.MustParse("32Gi"),
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "node-"},
		Status: v1.NodeStatus{
			Capacity: capacity, Allocatable: capacity.DeepCopy(), Phase: v1.NodeRunning,
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
		},
	}
}

// makeNode is node i of the workload: the template named generateName
// and i, labelled with its hostname, as scheduler_perf labels its nodes,
// and with the label strategy's values in turn.
func (pw *processWorkload) makeNode(i int) *v1.Node {
	n := pw.node.DeepCopy()
	n.Name, n.GenerateName = fmt.Sprintf("%s%05d", pw.node.GenerateName, i), ""
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[v1.LabelHostname] = n.Name
	if pw.labelKey != "" {
		n.Labels[pw.labelKey] = pw.labelValue[i%len(pw.labelValue)]
	}
	return n
}

// make is pod i of the batch's template, named its generateName and
// suffix, in namespace ns, bound to node if not empty.
func (b podBatch) make(i int, suffix, ns, node string) *v1.Pod {
	p := b.pod.DeepCopy()
	p.Name, p.GenerateName, p.Namespace = b.pod.GenerateName+suffix, "", ns
	p.Spec.NodeName = node
	if b.signatureBatch > 0 {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels["signature"] = fmt.Sprintf("signature-label-%d", i/b.signatureBatch)
	}
	return p
}

// parseParams reads "name=value,..." into a map.
func parseParams(s string) (map[string]int, error) {
	out := map[string]int{}
	if s == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if !ok || k == "" || err != nil || n < 0 {
			return nil, fmt.Errorf("%q: want name=count", kv)
		}
		out[k] = n
	}
	return out, nil
}

// featureGateFlag is gates as --feature-gates takes them, sorted; empty
// when there are none.
func featureGateFlag(gates map[string]bool) string {
	var parts []string
	for k, v := range gates {
		parts = append(parts, fmt.Sprintf("%s=%t", k, v))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}
