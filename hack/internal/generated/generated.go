// Package generated writes the generated part of a document: the lines
// between a begin and an end marker line, which a command rewrites from
// its results while the rest of the document is written by hand.
package generated

import (
	"bytes"
	"fmt"
	"os"
)

// Part is the generated part of a document: the lines between the marker
// lines Begin and End (each a whole line, without its newline).
type Part struct {
	Begin, End string
}

// Check reports whether file has the part's markers, Begin before End.
func (p Part) Check(file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	_, _, err = p.find(file, data)
	return err
}

// Replace replaces the lines between the part's markers in file by text,
// which ends in a newline or is empty, keeping the markers and everything
// outside them.
func (p Part) Replace(file, text string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	begin, end, err := p.find(file, data)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	out.Write(data[:begin])
	out.WriteString(text)
	out.Write(data[end:])
	return os.WriteFile(file, out.Bytes(), 0o644)
}

// find returns the offsets in data of the line after Begin and of the
// line End.
func (p Part) find(file string, data []byte) (begin, end int, err error) {
	begin = lineIndex(data, p.Begin, 0)
	if begin >= 0 {
		begin += len(p.Begin) + 1
		end = lineIndex(data, p.End, begin)
	}
	if begin < 0 || end < 0 {
		return 0, 0, fmt.Errorf("%s has no generated part: want a line %q and, after it, a line %q", file, p.Begin, p.End)
	}
	return begin, end, nil
}

// lineIndex is the offset of the first whole line equal to line at or
// after from, or -1.
func lineIndex(data []byte, line string, from int) int {
	for i := from; i < len(data); {
		next := bytes.IndexByte(data[i:], '\n')
		if next < 0 {
			return -1
		}
		if string(data[i:i+next]) == line {
			return i
		}
		i += next + 1
	}
	return -1
}
