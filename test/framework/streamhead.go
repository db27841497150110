package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/schedscope/schedscope/pkg/stream"
)

// StreamHead returns the sequence of the newest record of the record
// stream at streamURL in epoch, without transferring the buffered records
// as a list would (up to the buffer size of them, hundreds of kilobytes
// each at thousands of nodes): it watches from the newest record and
// returns the sequence the first BOOKMARK event carries. The stream sends
// one every --record-stream-bookmark-interval, so a call takes up to that
// long; records added meanwhile are read past. A stream of another epoch
// (the scheduler restarted) is an error.
func StreamHead(ctx context.Context, streamURL, epoch string) (uint64, error) {
	q := url.Values{stream.ParamWatch: {"true"}, stream.ParamEpoch: {epoch}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, streamURL+"?"+q.Encode(), nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return 0, fmt.Errorf("watching %s in epoch %s: %s: %s", streamURL, epoch, resp.Status, strings.TrimSpace(string(body)))
	}
	dec := json.NewDecoder(resp.Body)
	for {
		// Only the type and sequence: an ADDED event's record is skipped.
		var ev struct {
			Type string `json:"type"`
			Seq  uint64 `json:"seq"`
		}
		if err := dec.Decode(&ev); err != nil {
			return 0, fmt.Errorf("watching %s for a bookmark: %w", streamURL, err)
		}
		if ev.Type == stream.EventBookmark {
			return ev.Seq, nil
		}
	}
}
