package app

import (
	"errors"
	"fmt"
)

// Exit codes.
const (
	// ExitOK: success; for explain, the pod's latest attempt scheduled it.
	ExitOK = 0
	// ExitFailure: any other failure (connection, authorization, server).
	ExitFailure = 1
	// ExitUsage: bad command line.
	ExitUsage = 2
	// ExitPending: the pod's latest attempt did not schedule it.
	ExitPending = 3
	// ExitNotFound: no attempt recorded for the pod (or node, or attempt).
	ExitNotFound = 4
)

// ExitError carries an exit code; a nil Err prints nothing.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit code %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

func usageErrorf(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// ExitCode returns the exit code for the error Execute returned.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitFailure
}
