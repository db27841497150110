package postgres

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/record/recordtest"
	"github.com/schedscope/schedscope/pkg/sidecar/api"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/sidecar/store/sqlite"
	"github.com/schedscope/schedscope/pkg/stream"
)

var storedAttempts = flag.Int("stored-attempts", 1_000_000, "attempts BenchmarkAPIAtScale stores before it asks")

const (
	// attemptsPerPod and namespaces shape the stored attempts: each pod
	// failed attemptsPerPod times, its outcomes alternating so that none
	// folds into the one before, and the pods are spread evenly over
	// namespaces.
	attemptsPerPod = 10
	namespaces     = 100
	// nodesPerRecord is each record's node count: what is asked of the
	// store, not the decoding of one record, is measured here.
	nodesPerRecord = 50
)

// BenchmarkAPIAtScale measures the API's latency, over real HTTP, with
// -stored-attempts attempts stored in SQLite and in PostgreSQL: explain
// of a random pod by name, a random namespace's pending pods, and the
// cluster's pending pods (each one page of the default limit). It
// reports the 50th and 99th percentile of each, and how long storing
// took. b.N is the requests asked of each endpoint.
func BenchmarkAPIAtScale(b *testing.B) {
	for _, kind := range []string{"sqlite", "postgres"} {
		b.Run(fmt.Sprintf("%s/attempts=%d", kind, *storedAttempts), func(b *testing.B) {
			benchmarkAPIAtScale(b, kind)
		})
	}
}

func benchmarkAPIAtScale(b *testing.B, kind string) {
	ctx := context.Background()
	var st store.Store
	var err error
	if kind == "postgres" {
		var url string
		if url, err = server.CreateDatabase(ctx); err != nil {
			b.Fatal(err)
		}
		st, err = Open(ctx, url, store.Options{})
	} else {
		st, err = sqlite.Open(ctx, filepath.Join(b.TempDir(), "records.db"), store.Options{})
	}
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	pods := *storedAttempts / attemptsPerPod
	filled := time.Now()
	if err := fillStore(ctx, st, pods); err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: stored %d attempts of %d pods in %s", kind, pods*attemptsPerPod, pods, time.Since(filled).Round(time.Second))

	h, err := api.New(api.Config{
		Store: st,
		Authenticator: authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
			return &authenticator.Response{User: &user.DefaultInfo{Name: "admin"}}, true, nil
		}),
		Authorizer: authorizerfactory.NewAlwaysAllowAuthorizer(),
	})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	endpoints := []struct {
		name string
		path func() string
	}{
		{"explain", func() string {
			i := rng.IntN(pods)
			return fmt.Sprintf("namespaces/%s/pods/%s/explain", podNamespace(i), podName(i))
		}},
		{"pending-namespace", func() string { return fmt.Sprintf("namespaces/%s/pending", podNamespace(rng.IntN(namespaces))) }},
		{"pending-cluster", func() string { return "pending" }},
	}
	for _, e := range endpoints {
		b.Run(e.name, func(b *testing.B) {
			took := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				if err := get(srv.URL + v1alpha1.Prefix + e.path()); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// fillStore stores attemptsPerPod unschedulable attempts of each of pods
// pods, a pod's attempts among other pods' as the scheduler's retries
// come, 1000 records a transaction.
func fillStore(ctx context.Context, st store.Store, pods int) error {
	const batch = 1000
	nodes := recordtest.NodeNames("node", 0, nodesPerRecord)
	var records []stream.Record
	var seq uint64
	for n := range attemptsPerPod {
		for i := range pods {
			seq++
			w := recordtest.MakeAttempt(podNamespace(i), podName(i), fmt.Sprintf("uid-%d", i)).
				Number(n + 1).Finished(recordtest.Base.Add(time.Duration(seq) * time.Millisecond)).
				Unschedulable(fmt.Sprintf("0/%d nodes are available", nodesPerRecord))
			if n%2 == 0 {
				w.Rejected("NodeResourcesFit", "Insufficient cpu", nodes...)
			} else {
				w.Rejected("TaintToleration", "node(s) had untolerated taint {dedicated: infra}", nodes...)
			}
			records = append(records, stream.Record{Seq: seq, Attempt: w.Obj()})
			if len(records) == batch || seq == uint64(pods*attemptsPerPod) {
				if err := st.Append(ctx, v1alpha1.Cursor{Epoch: "fill", Seq: seq}, records); err != nil {
					return fmt.Errorf("storing records up to %d: %w", seq, err)
				}
				records = records[:0]
			}
		}
	}
	return nil
}

func podNamespace(i int) string { return fmt.Sprintf("team-%02d", i%namespaces) }
func podName(i int) string      { return fmt.Sprintf("pod-%06d", i) }

// get asks url and reads the whole answer, which must be 200.
func get(url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("GET %s: reading the answer: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return nil
}
