package record

import "fmt"

// FormatVersion is the version of the record's encoding (Encode) that this
// build writes: the record stream and the sidecar's store carry it beside
// every record. A change that an older reader would misread (a field
// renamed, retyped or given another meaning) takes the next version;
// adding a field that older readers may ignore does not.
const FormatVersion = 1

// FormatVersions are the versions this build reads.
var FormatVersions = []int{1}

// FormatError is a record of a format version this build does not read;
// version 0 is a record that names none.
type FormatError struct {
	Version int
}

func (e *FormatError) Error() string {
	if e.Version == 0 {
		return fmt.Sprintf("the record names no format version (this build reads versions %v)", FormatVersions)
	}
	return fmt.Sprintf("record format version %d is not one this build reads (it reads versions %v)", e.Version, FormatVersions)
}

// CheckFormat returns a *FormatError unless this build reads records of
// format version v.
func CheckFormat(v int) error {
	for _, known := range FormatVersions {
		if v == known {
			return nil
		}
	}
	return &FormatError{Version: v}
}
