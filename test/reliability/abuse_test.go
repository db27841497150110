//go:build reliability

package reliability

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/schedscope/schedscope/pkg/apis/schedscope/v1alpha1"
)

// Bounds the sidecar keeps under abuse during the 10000-pod burst.
const (
	// maxReadyzP99 bounds the 99th percentile of /readyz's latency.
	maxReadyzP99 = time.Second
	// maxSidecarRSS bounds the sidecar's peak resident memory.
	maxSidecarRSS = 1 << 30
)

// abuse is a hostile load on the sidecar's API: readers asking for the
// most expensive answers it gives (rejections by node over every node,
// with a time series; every pending pod; a thousand namespaces' lists),
// as fast as they are answered and more at once than one caller may have
// in flight, callers without rights asking for everything, and a prober
// timing /readyz.
type abuse struct {
	cancel context.CancelFunc
	done   sync.WaitGroup

	mu     sync.Mutex
	codes  map[string]map[int]int // kind → status → answers
	readyz []time.Duration
	failed int // /readyz answers that were not 200, or no answer
}

// abuser asks for one kind of answer, with token, at paths it picks.
type abuser struct {
	kind, token string
	path        func(i int) string
}

func startAbuse(base, adminToken, viewerToken string) *abuse {
	ctx, cancel := context.WithCancel(context.Background())
	a := &abuse{cancel: cancel, codes: map[string]map[int]int{}}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxIdleConnsPerHost: 16,
	}}
	api := base + v1alpha1.Prefix
	byNode := func(int) string { return api + "rejections?by=node&since=1h&step=10s&limit=10000" }
	abusers := []abuser{
		{"rejections by node, every node, 360 buckets", adminToken, byNode},
		{"rejections by node, every node, 360 buckets", adminToken, byNode},
		{"pending, cluster-wide, 10000", adminToken, func(int) string { return api + "pending?limit=10000" }},
		{"pods, cluster-wide, 10000", adminToken, func(int) string { return api + "pods?limit=10000" }},
		{"pending of 1000 namespaces in turn", adminToken, func(i int) string { return fmt.Sprintf("%snamespaces/abuse-%d/pending?limit=10000", api, i%1000) }},
		{"pending, cluster-wide, without rights", viewerToken, func(int) string { return api + "pending?limit=10000" }},
		{"rejections by node, without rights", viewerToken, byNode},
	}
	for _, ab := range abusers {
		a.done.Add(1)
		go func() {
			defer a.done.Done()
			for i := 0; ctx.Err() == nil; i++ {
				code := get(ctx, client, ab.path(i), ab.token)
				if ctx.Err() != nil {
					return
				}
				a.mu.Lock()
				if a.codes[ab.kind] == nil {
					a.codes[ab.kind] = map[int]int{}
				}
				a.codes[ab.kind][code]++
				a.mu.Unlock()
			}
		}()
	}
	a.done.Add(1)
	go func() {
		defer a.done.Done()
		for ctx.Err() == nil {
			began := time.Now()
			code := get(ctx, client, base+"/readyz", "")
			took := time.Since(began)
			if ctx.Err() != nil {
				return
			}
			a.mu.Lock()
			a.readyz = append(a.readyz, took)
			if code != http.StatusOK {
				a.failed++
			}
			a.mu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return a
}

// get returns the status of a GET of url with token, or 0 when there was
// no answer; the body is read and discarded.
func get(ctx context.Context, client *http.Client, url, token string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// stop ends the load and checks what it got: every abusive request
// answered 200, 403 (without rights) or 429 (beyond the per-caller
// limit), never an error or no answer, and /readyz fast and always ready.
func (a *abuse) stop(t *testing.T) {
	t.Helper()
	a.cancel()
	a.done.Wait()
	for _, kind := range slices.Sorted(maps.Keys(a.codes)) {
		codes := a.codes[kind]
		t.Logf("abusive %s: answers by status %v", kind, codes)
		for code := range codes {
			if code != http.StatusOK && code != http.StatusForbidden && code != http.StatusTooManyRequests {
				t.Errorf("abusive %s: %d answers with status %d", kind, codes[code], code)
			}
		}
	}
	sort.Slice(a.readyz, func(i, j int) bool { return a.readyz[i] < a.readyz[j] })
	if len(a.readyz) == 0 {
		t.Fatal("/readyz was never answered during the burst")
	}
	p50, p99 := a.readyz[len(a.readyz)/2], a.readyz[len(a.readyz)*99/100]
	t.Logf("/readyz under abuse: %d probes, p50 %v, p99 %v, max %v, %d not ready or unanswered",
		len(a.readyz), p50.Round(time.Microsecond), p99.Round(time.Microsecond), a.readyz[len(a.readyz)-1].Round(time.Microsecond), a.failed)
	if p99 > maxReadyzP99 {
		t.Errorf("/readyz p99 %v under abuse, want at most %v", p99, maxReadyzP99)
	}
	if a.failed > 0 {
		t.Errorf("/readyz not ready or unanswered %d times of %d under abuse", a.failed, len(a.readyz))
	}
}
