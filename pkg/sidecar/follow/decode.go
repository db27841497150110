package follow

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/schedscope/schedscope/pkg/stream"
)

// EventDecoder reads the events of a watch: newline-delimited JSON objects.
type EventDecoder struct {
	dec *json.Decoder
	n   int
}

// NewEventDecoder returns a decoder reading from r.
func NewEventDecoder(r io.Reader) *EventDecoder {
	return &EventDecoder{dec: json.NewDecoder(r)}
}

// Next returns the next event, io.EOF at the clean end of the stream, or an
// error naming the event that could not be decoded.
func (d *EventDecoder) Next() (stream.Event, error) {
	var ev stream.Event
	if err := d.dec.Decode(&ev); err != nil {
		if errors.Is(err, io.EOF) {
			return ev, io.EOF
		}
		return ev, fmt.Errorf("decoding watch event %d: %w", d.n+1, err)
	}
	d.n++
	if err := ValidateEvent(ev); err != nil {
		return ev, fmt.Errorf("watch event %d: %w", d.n, err)
	}
	return ev, nil
}

// ValidateEvent checks what the follower relies on in an event.
func ValidateEvent(ev stream.Event) error {
	switch ev.Type {
	case stream.EventAdded:
		if ev.Object == nil {
			return fmt.Errorf("%s event %d has no object", ev.Type, ev.Seq)
		}
		if ev.Seq == 0 {
			return fmt.Errorf("%s event has sequence 0", ev.Type)
		}
		if ev.Object.Seq != ev.Seq {
			return fmt.Errorf("%s event %d carries record %d", ev.Type, ev.Seq, ev.Object.Seq)
		}
	case stream.EventBookmark:
	default:
		return fmt.Errorf("unknown event type %q", ev.Type)
	}
	return nil
}

// DecodeList decodes a list response.
func DecodeList(r io.Reader) (*stream.List, error) {
	var l stream.List
	if err := json.NewDecoder(r).Decode(&l); err != nil {
		return nil, fmt.Errorf("decoding list: %w", err)
	}
	if l.Epoch == "" {
		return nil, errors.New("list has no epoch")
	}
	for i, a := range l.Items {
		if a == nil {
			return nil, fmt.Errorf("list item %d is null", i)
		}
		if a.Seq == 0 || (i > 0 && a.Seq <= l.Items[i-1].Seq) {
			return nil, fmt.Errorf("list item %d has sequence %d, out of order", i, a.Seq)
		}
	}
	return &l, nil
}

// DecodeGone decodes the body of a 410 response.
func DecodeGone(r io.Reader) (*stream.Gone, error) {
	var g stream.Gone
	if err := json.NewDecoder(r).Decode(&g); err != nil {
		return nil, fmt.Errorf("decoding 410 Gone body: %w", err)
	}
	if g.Epoch == "" {
		return nil, errors.New("410 Gone body has no epoch")
	}
	return &g, nil
}
