package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
)

// Request is a list or a watch.
type Request struct {
	Watch bool
	// Epoch, when set, is the epoch Since belongs to: a stream in another
	// epoch answers 410 Gone.
	Epoch string
	// Since, when set, asks for the records after it. Unset, a list
	// returns everything buffered and a watch starts after the newest
	// record.
	Since *uint64
}

// GoneError is a 410 Gone answer: the records after the request's Since
// were dropped, or its epoch ended.
type GoneError struct {
	Gone
}

func (e *GoneError) Error() string { return "410 Gone: " + e.Message }

// ErrMalformed marks answers that do not follow the protocol.
var ErrMalformed = errors.New("malformed answer")

// Client requests lists and watches of a record stream.
type Client struct {
	url       *url.URL
	http      *http.Client
	tokenFile string
}

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithTokenFile sends the bearer token held in path with every request.
// The file is read for each request, a list or a watch (so each
// reconnection), so that a rotated token is used. An empty path sends no
// token. A token needs an https stream URL, and the client then follows no
// redirect: the token goes to the stream only.
func WithTokenFile(path string) ClientOption {
	return func(c *Client) { c.tokenFile = path }
}

// NewClient returns a client of the stream at streamURL (for example
// http://127.0.0.1:10262/v1/records); hc nil means http.DefaultClient. An
// https stream's certificate is verified as hc's transport does.
func NewClient(streamURL string, hc *http.Client, opts ...ClientOption) (*Client, error) {
	u, err := url.Parse(streamURL)
	switch {
	case err != nil:
		return nil, fmt.Errorf("stream URL %q: %w", streamURL, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("stream URL %q: scheme must be http or https", streamURL)
	case u.Host == "":
		return nil, fmt.Errorf("stream URL %q has no host", streamURL)
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	c := &Client{url: u, http: hc}
	for _, opt := range opts {
		opt(c)
	}
	if c.tokenFile != "" {
		if u.Scheme != "https" {
			return nil, fmt.Errorf("stream URL %q: a bearer token is sent over https only", streamURL)
		}
		noRedirect := *hc
		noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		c.http = &noRedirect
	}
	return c, nil
}

// token reads the bearer token from the token file.
func (c *Client) token() (string, error) {
	b, err := os.ReadFile(c.tokenFile)
	if err != nil {
		return "", fmt.Errorf("reading the stream token: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("reading the stream token: %s is empty", c.tokenFile)
	}
	return token, nil
}

// URL returns the address of a request.
func (c *Client) URL(req Request) string {
	u := *c.url
	q := u.Query()
	if req.Since != nil {
		q.Set(ParamSince, strconv.FormatUint(*req.Since, 10))
	}
	if req.Epoch != "" {
		q.Set(ParamEpoch, req.Epoch)
	}
	if req.Watch {
		q.Set(ParamWatch, "true")
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Open sends a request and returns the body of a 200 answer: a List for a
// list (read it with DecodeList), events for a watch (read them with an
// EventDecoder). A 410 answer is a *GoneError; a 410 body that cannot be
// decoded wraps ErrMalformed.
func (c *Client) Open(ctx context.Context, req Request) (io.ReadCloser, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL(req), nil)
	if err != nil {
		return nil, err
	}
	if c.tokenFile != "" {
		token, err := c.token()
		if err != nil {
			return nil, err
		}
		hr.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("requesting %s: %w", hr.URL, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return resp.Body, nil
	case http.StatusGone:
		defer resp.Body.Close()
		g, err := DecodeGone(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("%w from %s: %w", ErrMalformed, hr.URL, err)
		}
		return nil, &GoneError{Gone: *g}
	default:
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		var msg struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Message != "" {
			return nil, fmt.Errorf("%s from %s: %s", resp.Status, hr.URL, msg.Message)
		}
		return nil, fmt.Errorf("%s from %s", resp.Status, hr.URL)
	}
}

// Head returns the sequence of the newest record in epoch without
// transferring the buffered records as a list would: it watches from the
// newest record and returns the sequence of the first BOOKMARK event. The
// server sends one every bookmark interval, so a call takes up to that
// long. A stream of another epoch is a *GoneError.
func (c *Client) Head(ctx context.Context, epoch string) (uint64, error) {
	body, err := c.Open(ctx, Request{Watch: true, Epoch: epoch})
	if err != nil {
		return 0, err
	}
	defer body.Close()
	dec := NewEventDecoder(body)
	for {
		line, n, err := dec.ReadLine()
		if err != nil {
			return 0, fmt.Errorf("watching %s for a bookmark: %w", c.url, err)
		}
		// Only the type and sequence: an ADDED event's record is not decoded.
		var ev wireEvent
		if err := jsonv2.Unmarshal(line, &ev, jsonOptions); err != nil {
			return 0, fmt.Errorf("%w: watch event %d: %w", ErrMalformed, n, err)
		}
		if ev.Type == EventBookmark {
			return ev.Seq, nil
		}
	}
}
