package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// procInfo is the part of /proc/<pid>/stat the fake needs.
type procInfo struct {
	state byte
	ppid  int
	start uint64 // starttime in clock ticks since boot (field 22)
	utime uint64
	stime uint64
}

func readProcStat(pid int) (procInfo, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	// comm may contain spaces and parentheses: fields start after the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procInfo{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return procInfo{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	utime, _ := strconv.ParseUint(f[11], 10, 64)
	stime, _ := strconv.ParseUint(f[12], 10, 64)
	start, _ := strconv.ParseUint(f[19], 10, 64)
	return procInfo{state: f[0][0], ppid: ppid, start: start, utime: utime, stime: stime}, true
}

func procStartTime(pid int) uint64 {
	info, _ := readProcStat(pid)
	return info.start
}

// procAlive reports whether pid still runs the same process (start time) and
// is not a zombie. A zombie counts as dead: its parent may never reap it.
func procAlive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	info, ok := readProcStat(pid)
	if !ok || info.state == 'Z' || info.state == 'X' {
		return false
	}
	return start == 0 || info.start == start
}

// procChildren lists the children of pid (single-threaded processes only,
// which bwrap is).
func procChildren(pid int) []int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	if err != nil {
		return scanChildren(pid)
	}
	var out []int
	for _, f := range strings.Fields(string(data)) {
		if c, err := strconv.Atoi(f); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// scanChildren is the fallback for kernels without CONFIG_PROC_CHILDREN.
func scanChildren(pid int) []int {
	var out []int
	for _, p := range allPids() {
		if info, ok := readProcStat(p); ok && info.ppid == pid {
			out = append(out, p)
		}
	}
	return out
}

func allPids() []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		if p, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// pidNamespace returns the inode identifying pid's pid namespace.
func pidNamespace(pid int) (uint64, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/"+strconv.Itoa(pid)+"/ns/pid", &st); err != nil {
		return 0, false
	}
	return st.Ino, true
}

// nsProcesses lists the host pids of every process in the given pid namespace.
func nsProcesses(ns uint64) []int {
	var out []int
	for _, p := range allPids() {
		if n, ok := pidNamespace(p); ok && n == ns {
			out = append(out, p)
		}
	}
	return out
}

// waitGone polls until every pid is dead or a zombie, or the deadline passes.
func waitGone(pids []int, starts []uint64, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	delay := time.Millisecond
	for {
		alive := false
		for i, p := range pids {
			if procAlive(p, starts[i]) {
				alive = true
			}
		}
		if !alive {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(delay)
		if delay < 20*time.Millisecond {
			delay *= 2
		}
	}
}

// rssBytes is the resident set size of pid.
func rssBytes(pid int) uint64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}
