package app

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/kubectl/pkg/cmd/get"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
)

// outputFormats are the -o values completion offers.
var outputFormats = []string{OutputTable, OutputWide, OutputName, OutputJSON, OutputYAML, "jsonpath=", "jsonpath-as-json=", "go-template=", "custom-columns=", "custom-columns-file="}

// tableOutput reports whether -o asks for one of the plugin's tables.
func (o *Options) tableOutput() bool {
	return o.Output == OutputTable || o.Output == OutputWide
}

// customColumns reports whether -o asks for kubectl's custom columns.
func (o *Options) customColumns() bool {
	return strings.HasPrefix(o.Output, "custom-columns")
}

// printer returns kubectl's printer of -o: name, json, yaml, jsonpath,
// go-template or custom-columns.
func (o *Options) printer() (printers.ResourcePrinter, error) {
	if o.customColumns() {
		return (&get.CustomColumnsPrintFlags{NoHeaders: o.NoHeaders}).ToPrinter(o.Output)
	}
	pf := genericclioptions.NewPrintFlags("")
	pf.OutputFormat = &o.Output
	return pf.ToPrinter()
}

// print prints v, an answer of the API, with the table function or with
// kubectl's printer of -o. The printers see v as an object of kind v's type
// in the API's group; custom columns see each item of a list as a row, and
// -o name prints the Kubernetes objects v is about (pods or nodes).
func (o *Options) print(v any, table func(io.Writer)) error {
	if o.tableOutput() {
		table(o.Out)
		return nil
	}
	p, err := o.printer()
	if err != nil {
		return err
	}
	var obj runtime.Object
	switch {
	case o.Output == OutputName:
		if obj, err = namedObjects(v); err != nil {
			return err
		}
	case o.customColumns():
		if obj, err = answerObject(v); err != nil {
			return err
		}
		if u := obj.(*unstructured.Unstructured); u.IsList() {
			if obj, err = u.ToList(); err != nil {
				return err
			}
		}
	default:
		if obj, err = answerObject(v); err != nil {
			return err
		}
	}
	return p.PrintObj(obj, o.Out)
}

// answerObject returns v as an unstructured object of kind v's type in the
// API's group.
func answerObject(v any) (*unstructured.Unstructured, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{}
	if err := json.Unmarshal(b, &obj.Object); err != nil {
		return nil, err
	}
	obj.SetAPIVersion(v1alpha1.GroupName + "/" + v1alpha1.Version)
	obj.SetKind(reflect.TypeOf(v).Elem().Name())
	return obj, nil
}

// namedObjects returns the pods or nodes an answer is about, as a list of
// objects that kubectl's name printer prints as pod/NAME or node/NAME.
func namedObjects(v any) (*unstructured.UnstructuredList, error) {
	list := &unstructured.UnstructuredList{}
	add := func(kind, namespace, name string) {
		obj := unstructured.Unstructured{}
		obj.SetAPIVersion("v1")
		obj.SetKind(kind)
		obj.SetNamespace(namespace)
		obj.SetName(name)
		list.Items = append(list.Items, obj)
	}
	addPod := func(p v1alpha1.PodRef) { add("Pod", p.Namespace, p.Name) }
	switch a := v.(type) {
	case *v1alpha1.PodList:
		for _, s := range a.Items {
			addPod(s.Pod)
		}
	case *v1alpha1.Explanation:
		addPod(a.Pod)
	case *v1alpha1.AttemptList:
		// The pods of the attempts, each once: one for a pod's history,
		// several for -l or a workload.
		seen := map[v1alpha1.PodRef]bool{}
		for _, it := range a.Items {
			if pod := (v1alpha1.PodRef{Namespace: it.Pod.Namespace, Name: it.Pod.Name}); !seen[pod] {
				seen[pod] = true
				addPod(it.Pod)
			}
		}
	case *v1alpha1.RejectionList:
		if a.By != v1alpha1.ByNode {
			return nil, usageErrorf("-o name: top plugins counts plugins, which are not Kubernetes objects; try top nodes")
		}
		for _, it := range a.Items {
			add("Node", "", it.Key)
		}
	default:
		return nil, usageErrorf("-o name: this answer is about no Kubernetes object")
	}
	return list, nil
}

// table is one of the plugin's tables: a header row and rows of cells,
// printed in columns two spaces apart.
type table struct {
	header []string
	rows   [][]string
}

// newTable returns a table with these column headers.
func newTable(header ...string) *table {
	return &table{header: header}
}

// addRow adds a row, a cell for each column.
func (t *table) addRow(cells ...string) {
	t.rows = append(t.rows, cells)
}

// prependColumn makes a column with this header and cells, one for each
// row, the table's first.
func (t *table) prependColumn(header string, cells []string) {
	t.header = append([]string{header}, t.header...)
	for i := range t.rows {
		t.rows[i] = append([]string{cells[i]}, t.rows[i]...)
	}
}

// print writes the table to w, with its header row if headers.
func (t *table) print(w io.Writer, headers bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if headers {
		fmt.Fprintln(tw, strings.Join(t.header, "\t"))
	}
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	_ = tw.Flush()
}
