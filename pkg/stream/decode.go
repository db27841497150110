package stream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/schedscope/schedscope/pkg/record"
)

// MaxEventBytes bounds one line of a watch: far above the largest record
// (a few MB for tens of thousands of nodes), low enough that a broken
// stream cannot exhaust memory.
const MaxEventBytes = 256 << 20

// maxKeptLine bounds the buffer an EventDecoder keeps for long lines
// between reads: a record of tens of thousands of nodes.
const maxKeptLine = 16 << 20

// EventDecoder reads the events of a watch: one JSON object per line, as
// the stream server writes them.
type EventDecoder struct {
	r *bufio.Reader
	n int
	// long collects the chunks of a line longer than r's buffer; it is
	// kept for the next long line.
	long []byte
}

// NewEventDecoder returns a decoder reading from r.
func NewEventDecoder(r io.Reader) *EventDecoder {
	return &EventDecoder{r: bufio.NewReaderSize(r, 64<<10)}
}

// ReadLine returns the next non-blank line and its event number (from 1),
// or io.EOF at the clean end of the  The line is the caller's own:
// it may be decoded while the reader moves on.
func (d *EventDecoder) ReadLine() ([]byte, int, error) {
	for {
		line := d.long[:0]
		for {
			chunk, err := d.r.ReadSlice('\n')
			if len(line) == 0 && err == nil {
				line = chunk // the whole line is in r's buffer
				break
			}
			line = append(line, chunk...)
			d.long = line
			if len(line) > MaxEventBytes {
				return nil, d.n + 1, fmt.Errorf("watch event %d is longer than %d bytes", d.n+1, MaxEventBytes)
			}
			if err == nil {
				break
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if errors.Is(err, io.EOF) {
				if len(bytes.TrimSpace(line)) == 0 {
					return nil, d.n, io.EOF
				}
				return nil, d.n + 1, fmt.Errorf("watch event %d: %w", d.n+1, io.ErrUnexpectedEOF)
			}
			return nil, d.n + 1, fmt.Errorf("reading watch event %d: %w", d.n+1, err)
		}
		line = bytes.Clone(bytes.TrimSpace(line))
		if cap(d.long) > maxKeptLine {
			d.long = nil
		}
		if len(line) > 0 {
			d.n++
			return line, d.n, nil
		}
	}
}

// DecodedEvent is a decoded watch event.
type DecodedEvent struct {
	Type string
	Seq  uint64
	// Record is the record of an ADDED event: the client reads it without
	// its scores (the bulk of a large record, which readers keep encoded)
	// and keeps its JSON.
	Record Record
}

// The stream is read with the JSON v2 engine in v1 mode (the semantics of
// encoding/json, e.g. durations in nanoseconds), which validates and
// decodes in one pass: records of thousands of nodes are hundreds of
// kilobytes, and decoding them is most of a reader's work.
var jsonOptions = jsonv1.DefaultOptionsV1()

// wireEvent is Event with the record left encoded.
type wireEvent struct {
	Type    string         `json:"type"`
	Version int            `json:"version"`
	Seq     uint64         `json:"seq"`
	TraceID string         `json:"traceID"`
	Object  jsontext.Value `json:"object,omitempty"`
}

// wireItem is a list's Record with the record left encoded.
type wireItem struct {
	Seq     uint64         `json:"seq"`
	TraceID string         `json:"traceID"`
	Object  jsontext.Value `json:"object"`
}

// partialAttempt decodes a record without its scores: the bulk of a large
// record, which readers keep in the scheduler's JSON.
type partialAttempt struct {
	record.Attempt
	Scores skipped `json:"scores,omitempty"`
}

// skipped is a JSON value that is validated and not decoded.
type skipped struct{}

func (*skipped) UnmarshalJSONFrom(dec *jsontext.Decoder) error { return dec.SkipValue() }

// decodeRecord decodes raw, the JSON of the record of sequence seq and
// trace traceID; the Record keeps raw.
func decodeRecord(seq uint64, traceID string, raw []byte) (Record, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return Record{}, errors.New("the record is null")
	}
	var p partialAttempt
	if err := jsonv2.Unmarshal(raw, &p, jsonOptions); err != nil {
		return Record{}, err
	}
	return Record{Seq: seq, TraceID: traceID, Attempt: &p.Attempt, JSON: raw}, nil
}

// Next returns the next event, io.EOF at the clean end of the stream, or an
// error naming the event that could not be decoded.
func (d *EventDecoder) Next() (DecodedEvent, error) {
	line, n, err := d.ReadLine()
	if err != nil {
		return DecodedEvent{}, err
	}
	return DecodeEvent(line, n)
}

// DecodeEvent decodes and validates event number n of a watch. An ADDED
// event of a record format version this build does not read is an error
// that wraps a *record.FormatError.
func DecodeEvent(line []byte, n int) (DecodedEvent, error) {
	var w wireEvent
	if err := jsonv2.Unmarshal(line, &w, jsonOptions); err != nil {
		return DecodedEvent{}, fmt.Errorf("decoding watch event %d: %w", n, err)
	}
	ev := DecodedEvent{Type: w.Type, Seq: w.Seq}
	if w.Type == EventAdded {
		if err := record.CheckFormat(w.Version); err != nil {
			return ev, fmt.Errorf("watch event %d: %s event %d: %w", n, w.Type, w.Seq, err)
		}
		r, err := decodeRecord(w.Seq, w.TraceID, w.Object)
		if err != nil {
			return ev, fmt.Errorf("watch event %d: %s event %d: %w", n, w.Type, w.Seq, err)
		}
		ev.Record = r
	}
	if err := ValidateEvent(ev); err != nil {
		return ev, fmt.Errorf("watch event %d: %w", n, err)
	}
	return ev, nil
}

// ValidateEvent checks what readers rely on in an event.
func ValidateEvent(ev DecodedEvent) error {
	switch ev.Type {
	case EventAdded:
		if ev.Record.Attempt == nil {
			return fmt.Errorf("%s event %d has no object", ev.Type, ev.Seq)
		}
		if ev.Seq == 0 {
			return fmt.Errorf("%s event has sequence 0", ev.Type)
		}
	case EventBookmark:
	default:
		return fmt.Errorf("unknown event type %q", ev.Type)
	}
	return nil
}

// ListHeader is a list response without its items.
type ListHeader struct {
	Version int
	Epoch   string
	Seq     uint64
	Oldest  uint64
	Newest  uint64
	Items   int
}

// DecodeList reads a list response item by item, so that a list of
// thousands of large records is never held in memory at once. It calls item
// for each record, in order, with the list's epoch; the server writes the
// version and the epoch before the items, and items that come first are
// held back until both are known. A list of a record format version this
// build does not read is an error that wraps a *record.FormatError, and
// hands on no record. An error from item stops the decoding and is
// returned as is.
func DecodeList(r io.Reader, item func(epoch string, r Record) error) (ListHeader, error) {
	var h ListHeader
	dec := jsontext.NewDecoder(r, jsonOptions)
	if err := expectKind(dec, '{'); err != nil {
		return h, fmt.Errorf("decoding list: %w", err)
	}
	var early []Record
	var last uint64
	for {
		if kind, err := peek(dec); err != nil {
			return h, fmt.Errorf("decoding list: %w", err)
		} else if kind == '}' {
			break
		}
		tok, err := dec.ReadToken()
		if err != nil {
			return h, fmt.Errorf("decoding list: %w", err)
		}
		key := tok.String()
		switch key {
		case "version":
			if err = jsonv2.UnmarshalDecode(dec, &h.Version, jsonOptions); err == nil {
				if err := record.CheckFormat(h.Version); err != nil {
					return h, fmt.Errorf("list: %w", err)
				}
			}
		case "epoch":
			err = jsonv2.UnmarshalDecode(dec, &h.Epoch, jsonOptions)
		case "seq":
			err = jsonv2.UnmarshalDecode(dec, &h.Seq, jsonOptions)
		case "oldest":
			err = jsonv2.UnmarshalDecode(dec, &h.Oldest, jsonOptions)
		case "newest":
			err = jsonv2.UnmarshalDecode(dec, &h.Newest, jsonOptions)
		case "items":
			if dec.PeekKind() == 'n' {
				_, err = dec.ReadToken()
				break
			}
			if err := expectKind(dec, '['); err != nil {
				return h, fmt.Errorf("decoding list items: %w", err)
			}
			for {
				if kind, err := peek(dec); err != nil {
					return h, fmt.Errorf("decoding list item %d: %w", h.Items, err)
				} else if kind == ']' {
					break
				}
				var w wireItem
				if err := jsonv2.UnmarshalDecode(dec, &w, jsonOptions); err != nil {
					return h, fmt.Errorf("decoding list item %d: %w", h.Items, err)
				}
				rec, err := decodeRecord(w.Seq, w.TraceID, w.Object)
				if err != nil {
					return h, fmt.Errorf("list item %d: %w", h.Items, err)
				}
				if rec.Seq == 0 || rec.Seq <= last {
					return h, fmt.Errorf("list item %d has sequence %d, out of order", h.Items, rec.Seq)
				}
				last = rec.Seq
				h.Items++
				if h.Epoch == "" || h.Version == 0 {
					early = append(early, rec)
					continue
				}
				if err := item(h.Epoch, rec); err != nil {
					return h, err
				}
			}
			_, err = dec.ReadToken() // ']'
		default:
			err = dec.SkipValue()
		}
		if err != nil {
			return h, fmt.Errorf("decoding list field %q: %w", key, err)
		}
	}
	if _, err := dec.ReadToken(); err != nil { // '}'
		return h, fmt.Errorf("decoding list: %w", err)
	}
	if err := record.CheckFormat(h.Version); err != nil {
		return h, fmt.Errorf("list: %w", err)
	}
	if h.Epoch == "" {
		return h, errors.New("list has no epoch")
	}
	for _, rec := range early {
		if err := item(h.Epoch, rec); err != nil {
			return h, err
		}
	}
	return h, nil
}

// peek returns the kind of the next token, or the error that keeps it
// from being read.
func peek(dec *jsontext.Decoder) (jsontext.Kind, error) {
	if kind := dec.PeekKind(); kind != 0 {
		return kind, nil
	}
	_, err := dec.ReadToken()
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return 0, err
}

// expectKind reads the next token, which must be of kind want.
func expectKind(dec *jsontext.Decoder, want jsontext.Kind) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != want {
		return fmt.Errorf("want %q, got %v", want, tok)
	}
	return nil
}

// DecodeGone decodes the body of a 410 response.
func DecodeGone(r io.Reader) (*Gone, error) {
	var g Gone
	if err := json.NewDecoder(r).Decode(&g); err != nil {
		return nil, fmt.Errorf("decoding 410 Gone body: %w", err)
	}
	if g.Epoch == "" {
		return nil, errors.New("410 Gone body has no epoch")
	}
	return &g, nil
}
