package app

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	kubeschedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/schedscope/schedscope/pkg/version"
)

var updateSetup = flag.Bool("update-setup", false, "rewrite the copy of upstream's Setup that TestSetupUnchanged compares with")

// followedFuncs are the functions of upstream's
// cmd/kube-scheduler/app/server.go that completeConfig, newScheduler and
// recorderFactory follow.
var followedFuncs = []string{"Setup", "getRecorderFactory"}

// TestSetupUnchanged fails when upstream's kube-scheduler builds its
// scheduler differently from the copy in testdata that completeConfig,
// newScheduler and recorderFactory follow: they build the scheduler as
// Setup does, with observe's recorder factory, for which Setup has no
// option. The functions are read from the source this test is built with.
func TestSetupUnchanged(t *testing.T) {
	kube := version.Kubernetes()
	parts := strings.SplitN(kube, ".", 3)
	if len(parts) < 2 {
		t.Fatalf("no k8s.io/kubernetes release in the build information: %q", kube)
	}
	followed := filepath.Join("testdata", fmt.Sprintf("kube-scheduler-setup-%s.%s.go.txt", parts[0], parts[1]))
	got := upstreamFuncs(t)
	if *updateSetup {
		if err := os.WriteFile(followed, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(followed)
	if err != nil {
		t.Fatalf("reading the copy of upstream's Setup: %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("k8s.io/kubernetes %s builds its scheduler differently from %s, which completeConfig, newScheduler "+
			"and recorderFactory (server.go, kube_*.go) follow: bring them in line, then run this test with "+
			"-update-setup (-followed +upstream):\n%s", kube, followed, diff)
	}
}

// upstreamFuncs is the source of followedFuncs, as the file that defines
// upstream's Setup in this build has them, one after the other.
func upstreamFuncs(t *testing.T) string {
	t.Helper()
	pc := reflect.ValueOf(kubeschedulerapp.Setup).Pointer()
	file, _ := runtime.FuncForPC(pc).FileLine(pc)
	if !filepath.IsAbs(file) {
		t.Fatalf("upstream's Setup is in %q: build the test without -trimpath", file)
	}
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	funcs := map[string]string{}
	for _, decl := range f.Decls {
		if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil {
			funcs[fn.Name.Name] = string(src[fset.Position(fn.Pos()).Offset:fset.Position(fn.End()).Offset])
		}
	}
	var out []string
	for _, name := range followedFuncs {
		fn, ok := funcs[name]
		if !ok {
			t.Fatalf("%s defines no function %s", file, name)
		}
		out = append(out, fn)
	}
	return strings.Join(out, "\n\n") + "\n"
}
