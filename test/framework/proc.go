package framework

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Memory is the resident set of a process, in bytes, as /proc/<pid>/status
// reports it.
type Memory struct {
	// Peak is the high-water mark of the resident set (VmHWM).
	Peak int64
	// Current is the resident set now (VmRSS).
	Current int64
}

// Memory reads the process's resident set: now and its peak since it
// started.
func (p *Process) Memory() (Memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		return Memory{}, fmt.Errorf("memory of %s: %w", p.Name, err)
	}
	defer f.Close()
	var m Memory
	found := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// A line reads "VmHWM:	  123456 kB".
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || key != "VmHWM" && key != "VmRSS" {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("memory of %s: %s in /proc/%d/status: %w", p.Name, key, p.Pid(), err)
		}
		if key == "VmHWM" {
			m.Peak = kb << 10
		} else {
			m.Current = kb << 10
		}
		found++
	}
	if err := sc.Err(); err != nil {
		return Memory{}, fmt.Errorf("memory of %s: %w", p.Name, err)
	}
	if found != 2 {
		return Memory{}, fmt.Errorf("memory of %s: /proc/%d/status has no VmHWM or no VmRSS", p.Name, p.Pid())
	}
	return m, nil
}

// userHZ is the unit of the CPU times in /proc/<pid>/stat: USER_HZ, 100
// on Linux whatever the kernel's tick rate.
const userHZ = 100

// CPUTime returns the CPU time the process has used so far, user and
// system, over all its threads.
func (p *Process) CPUTime() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Pid()))
	if err != nil {
		return 0, fmt.Errorf("CPU time of %s: %w", p.Name, err)
	}
	// The command name, in parentheses, may hold spaces: the fields that
	// follow it start with the state (field 3); utime and stime are
	// fields 14 and 15.
	i := bytes.LastIndexByte(b, ')')
	fields := strings.Fields(string(b[i+1:]))
	if i < 0 || len(fields) < 13 {
		return 0, fmt.Errorf("CPU time of %s: malformed /proc/%d/stat: %q", p.Name, p.Pid(), b)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("CPU time of %s: /proc/%d/stat: %w", p.Name, p.Pid(), err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}
