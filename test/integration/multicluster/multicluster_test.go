// Package multicluster tests several clusters' sidecars writing one
// PostgreSQL store: two real control planes, each with its own
// schedscope-scheduler and a sidecar naming its cluster, and one real
// PostgreSQL server.
package multicluster

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	neturl "net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
	"github.com/schedscope/schedscope/pkg/sidecar/store"
	"github.com/schedscope/schedscope/pkg/sidecar/store/postgres"
	"github.com/schedscope/schedscope/pkg/stream"
	"github.com/schedscope/schedscope/test/framework"
	"github.com/schedscope/schedscope/test/pgserver"
)

const profile = "schedscope"

// cluster is one control plane with its scheduler and sidecar.
type cluster struct {
	name    string
	cp      *framework.ControlPlane
	sched   *framework.Scheduler
	sidecar *framework.Sidecar
	// pending is how many of its pods cannot fit.
	scheduled, pending int
	// servesAll starts its sidecar with --serve-all-clusters.
	servesAll bool
}

// TestTwoClustersOneStore: the sidecars of clusters east and west write
// one PostgreSQL database, each as its cluster's writer role, which may
// change no row of the other cluster; east's serves every cluster
// (--serve-all-clusters), west's its own only. Both clusters have pods of
// the same names in the same namespace; every record each scheduler
// emitted is stored once under its cluster (stored = emitted per
// cluster); through east each pod is listed with its cluster and the UID
// its own cluster gave it, a cluster filter keeps one cluster's, and
// kubectl schedscope pending -A lists both clusters' pending pods with a
// CLUSTER column; through west only west's pods are listed, and asking
// for east's is answered 404.
func TestTwoClustersOneStore(t *testing.T) {
	ctx := context.Background()
	pg, err := pgserver.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	url, err := pg.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The tables' owner migrates; each sidecar writes as its cluster's
	// writer role.
	writerURL := confineWriters(t, url, "east", "west")
	clusters := []*cluster{{name: "east", scheduled: 3, pending: 2, servesAll: true}, {name: "west", scheduled: 2, pending: 3}}
	config := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection:\n  leaderElect: false\nprofiles:\n- schedulerName: " + profile + "\n"
	for _, c := range clusters {
		c.cp = framework.StartTestControlPlane(t)
		if c.sched, err = c.cp.StartScheduler(ctx, "schedscope-scheduler", "schedscope-scheduler", config); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.sched.Stop)
		args := []string{"--store", writerURL[c.name], "--cluster-name", c.name}
		if c.servesAll {
			args = append(args, "--serve-all-clusters")
		}
		if c.sidecar, err = c.cp.StartSidecar(ctx, "schedscope-sidecar", c.sched, args...); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.sidecar.Stop)
		framework.CreateNodes(t, c.cp.Client, 2)
		if _, err := c.cp.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The same names in both clusters: web-0, web-1, ... fit; the
		// next ones ask for more CPU than any node has.
		for i := range c.scheduled + c.pending {
			cpu := "100m"
			if i >= c.scheduled {
				cpu = "1000"
			}
			createPod(t, c.cp, fmt.Sprintf("web-%d", i), cpu)
		}
	}
	for _, c := range clusters {
		if err := framework.WaitForBound(ctx, c.cp.Client, "shop", c.scheduled, 30*time.Second); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}

	// Every record each scheduler emitted is stored, once, under its
	// cluster: folded repeats count as the attempts they are.
	for _, c := range clusters {
		var emitted, stored int
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			list, err := framework.ListRecords(c.sched.StreamURL)
			if err != nil {
				return false, err
			}
			emitted = len(list.Items)
			if stored, err = storedAttempts(c, clusters[0].sidecar); err != nil {
				return false, err
			}
			return emitted == c.scheduled+c.pending+countRetries(list.Items) && stored == emitted, nil
		})
		if err != nil {
			t.Fatalf("%s: %d records emitted, %d stored under the cluster: %v", c.name, emitted, stored, err)
		}
		t.Logf("%s: %d records emitted, %d stored under the cluster", c.name, emitted, stored)

		// The sidecar's metrics carry its cluster: each received every
		// record its own scheduler emitted.
		_, families, err := framework.Scrape(c.sidecar.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		received := families["schedscope_follower_records_received_total"]
		if got := framework.Sum(received, map[string]string{"cluster": c.name}); got != float64(emitted) || len(received.GetMetric()) != 1 {
			t.Errorf("%s's sidecar: schedscope_follower_records_received_total %v, want %d in one series labelled cluster=%q", c.name, received.GetMetric(), emitted, c.name)
		}
	}

	checkWritersConfined(t, writerURL["east"], "east", "west")

	// Every pod a sidecar serves is listed with its cluster and the UID its
	// cluster gave it.
	for _, reader := range clusters {
		var all v1alpha1.PodList
		getJSON(t, reader.sidecar, "namespaces/shop/pods?limit=100", &all)
		want := reader.scheduled + reader.pending
		if reader.servesAll {
			want = 10
		}
		if len(all.Items) != want {
			t.Fatalf("pods through %s's sidecar: %d, want %d", reader.name, len(all.Items), want)
		}
		for _, p := range all.Items {
			c := byName(clusters, p.Cluster)
			if !reader.servesAll && p.Cluster != reader.name {
				t.Errorf("%s's sidecar, serving its own cluster only, lists pod %s of %q", reader.name, p.Pod.Name, p.Cluster)
			}
			if c == nil || p.Latest.Cluster != p.Cluster {
				t.Errorf("pod %s/%s listed in cluster %q (latest attempt in %q)", p.Pod.Namespace, p.Pod.Name, p.Cluster, p.Latest.Cluster)
				continue
			}
			pod, err := c.cp.Client.CoreV1().Pods("shop").Get(ctx, p.Pod.Name, metav1.GetOptions{})
			if err != nil || string(pod.UID) != p.Pod.UID {
				t.Errorf("pod %s of %s: UID %s listed, %s has %v (%v)", p.Pod.Name, c.name, p.Pod.UID, c.name, podUID(pod), err)
			}
		}
		for _, c := range clusters {
			var pending v1alpha1.PodList
			if !reader.servesAll && c != reader {
				err := getJSONErr(reader.sidecar, "pending?limit=100&cluster="+c.name, &pending)
				if err == nil || !strings.Contains(err.Error(), ": 404: ") || !strings.Contains(err.Error(), "is not served here") {
					t.Errorf("%s's pending pods asked of %s's sidecar: %v, want 404 saying the cluster is not served there", c.name, reader.name, err)
				}
				continue
			}
			getJSON(t, reader.sidecar, "pending?limit=100&cluster="+c.name, &pending)
			var names []string
			for _, p := range pending.Items {
				if p.Cluster != c.name {
					t.Errorf("pending?cluster=%s through %s lists %s of %q", c.name, reader.name, p.Pod.Name, p.Cluster)
				}
				names = append(names, p.Pod.Name)
			}
			slices.Sort(names)
			var want []string
			for i := c.scheduled; i < c.scheduled+c.pending; i++ {
				want = append(want, fmt.Sprintf("web-%d", i))
			}
			if !slices.Equal(names, want) {
				t.Errorf("pending pods of %s through %s's sidecar: %v, want %v", c.name, reader.name, names, want)
			}
		}
	}

	for _, c := range clusters {
		out := runPlugin(t, c.cp.Kubeconfig, "pending", "-A", "--sidecar-url", c.sidecar.URL, "--insecure-skip-tls-verify")
		t.Logf("kubectl schedscope pending -A (through %s's sidecar):\n%s", c.name, out)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if !c.servesAll {
			if strings.HasPrefix(lines[0], "CLUSTER") || len(lines) != 1+c.pending {
				t.Errorf("pending -A through %s, serving its own cluster only: want its %d pods and no CLUSTER column:\n%s", c.name, c.pending, out)
			}
			continue
		}
		if !strings.HasPrefix(lines[0], "CLUSTER") || len(lines) != 1+5 {
			t.Errorf("pending -A through %s: want a CLUSTER column and 5 pods:\n%s", c.name, out)
		}
		for _, want := range []string{"east ", "west "} {
			if !strings.Contains(out, "\n"+want) {
				t.Errorf("pending -A through %s lists no pod of %s:\n%s", c.name, strings.TrimSpace(want), out)
			}
		}
		out = runPlugin(t, c.cp.Kubeconfig, "pending", "-A", "--cluster-name", "west", "--sidecar-url", c.sidecar.URL, "--insecure-skip-tls-verify")
		if lines := strings.Split(strings.TrimSpace(out), "\n"); strings.HasPrefix(lines[0], "CLUSTER") || len(lines) != 1+3 {
			t.Errorf("pending -A --cluster-name west through %s: want west's 3 pods and no CLUSTER column:\n%s", c.name, out)
		}
	}
}

// countRetries counts the records of attempts after a pod's first.
func countRetries(records []stream.Record) int {
	n := 0
	for _, r := range records {
		if r.Attempt.Attempt > 1 {
			n++
		}
	}
	return n
}

// storedAttempts counts c's attempts in the store as reader serves them,
// folded repeats included.
func storedAttempts(c *cluster, reader *framework.Sidecar) (int, error) {
	var pods v1alpha1.PodList
	if err := getJSONErr(reader, "namespaces/shop/pods?limit=100&cluster="+c.name, &pods); err != nil {
		return 0, err
	}
	n := 0
	for _, p := range pods.Items {
		var attempts v1alpha1.AttemptList
		if err := getJSONErr(reader, "namespaces/shop/pods/"+p.Pod.Name+"/attempts?limit=100&cluster="+c.name, &attempts); err != nil {
			return 0, err
		}
		for _, a := range attempts.Items {
			if a.Cluster != c.name {
				return 0, fmt.Errorf("attempt %d of %s asked in %s is %q's", a.Seq, p.Pod.Name, c.name, a.Cluster)
			}
			n += 1 + a.Repeats
		}
	}
	return n, nil
}

func byName(clusters []*cluster, name string) *cluster {
	for _, c := range clusters {
		if c.name == name {
			return c
		}
	}
	return nil
}

func podUID(p *v1.Pod) string {
	if p == nil {
		return ""
	}
	return string(p.UID)
}

func createPod(t *testing.T, cp *framework.ControlPlane, name, cpu string) {
	t.Helper()
	_, err := cp.Client.CoreV1().Pods("shop").Create(context.Background(), &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{SchedulerName: profile, Containers: []v1.Container{{Name: "c", Image: framework.PauseImage,
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

func getJSON(t *testing.T, s *framework.Sidecar, path string, v any) {
	t.Helper()
	if err := getJSONErr(s, path, v); err != nil {
		t.Fatal(err)
	}
}

func getJSONErr(s *framework.Sidecar, path string, v any) error {
	body, err := framework.GetWithToken(s.URL + v1alpha1.Prefix + path)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

// runPlugin runs kubectl-schedscope with kubeconfig and returns its
// output; a non-zero exit fails the test.
func runPlugin(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	plugin, err := framework.Binary("kubectl-schedscope")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(plugin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) || err != nil {
		t.Fatalf("kubectl-schedscope %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// confineWriters migrates the store at ownerURL as its tables' owner,
// makes a writer role of each cluster (cluster_writers), as
// docs/sidecar.md tells operators to, and returns each cluster's URL as
// its role.
func confineWriters(t *testing.T, ownerURL string, clusters ...string) map[string]string {
	t.Helper()
	ctx := t.Context()
	st, err := postgres.Open(ctx, ownerURL, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("pgx", ownerURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	urls := map[string]string{}
	for _, c := range clusters {
		role := "schedscope_" + c
		for _, stmt := range []string{
			`CREATE ROLE ` + role + ` LOGIN`,
			`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ` + role,
			`GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO ` + role,
			`INSERT INTO cluster_writers (role, cluster) VALUES ('` + role + `', '` + c + `')`,
		} {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		u, err := neturl.Parse(ownerURL)
		if err != nil {
			t.Fatal(err)
		}
		u.User = neturl.User(role)
		urls[c] = u.String()
	}
	return urls
}

// checkWritersConfined checks that cluster own's writer role, at url, may
// change its own cluster's rows and none of other's: a forged row is
// refused, and deletes and updates of other's rows touch nothing.
func checkWritersConfined(t *testing.T, url, own, other string) {
	t.Helper()
	ctx := t.Context()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := func(table string) int64 {
		var n int64
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table+` WHERE cluster = $1`, other).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := map[string]int64{}
	for _, table := range []string{"attempts", "pods", "rejections", "cursors"} {
		if before[table] = count(table); before[table] == 0 {
			t.Fatalf("%s's writer reads no %s row of %s: nothing to check", own, table, other)
		}
	}
	for _, stmt := range []string{
		`DELETE FROM attempts WHERE cluster = $1`,
		`DELETE FROM pods WHERE cluster = $1`,
		`DELETE FROM rejections WHERE cluster = $1`,
		`UPDATE cursors SET seq = 0 WHERE cluster = $1`,
	} {
		res, err := db.ExecContext(ctx, stmt, other)
		if err != nil {
			t.Fatalf("%s as %s's writer: %v", stmt, own, err)
		}
		if n, _ := res.RowsAffected(); n != 0 {
			t.Errorf("%s as %s's writer changed %d rows of %s, want none", stmt, own, n, other)
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO cursors (cluster, epoch, seq, lost) VALUES ($1, 'forged', 1, 0)`, other+"-forged"); err == nil || !strings.Contains(err.Error(), "row-level security") {
		t.Errorf("a cursor of another cluster inserted by %s's writer: %v, want a row-level security violation", own, err)
	}
	if res, err := db.ExecContext(ctx, `UPDATE cursors SET lost = lost WHERE cluster = $1`, own); err != nil {
		t.Errorf("%s's writer updating its own cursor: %v", own, err)
	} else if n, _ := res.RowsAffected(); n != 1 {
		t.Errorf("%s's writer updated %d of its own cursors, want 1", own, n)
	}
	for table, n := range before {
		if got := count(table); got != n {
			t.Errorf("%s of %s: %d rows after %s's writer tried to change them, want %d", table, other, got, own, n)
		}
	}
}
