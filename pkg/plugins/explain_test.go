package plugins

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsOnlyWhatTheSignaturesNeed: a plugin that imports this package
// gets the framework's types and nothing of schedscope's recorder or of
// k8s.io/kubernetes.
func TestImportsOnlyWhatTheSignaturesNeed(t *testing.T) {
	allowed := map[string]bool{"context": true, "k8s.io/api/core/v1": true, "k8s.io/kube-scheduler/framework": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if !allowed[path] {
				t.Errorf("%s imports %s, which the explainer interfaces' signatures do not need", name, path)
			}
		}
	}
}
