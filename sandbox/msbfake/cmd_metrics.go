package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// metricsEntry is one sample of `msb metrics --format json` (0.6.9 fields,
// raw cumulative counters).
type metricsEntry struct {
	Name                    string      `json:"name"`
	State                   string      `json:"state"`
	Cpus                    *int        `json:"cpus"`
	Timestamp               string      `json:"timestamp"`
	CPUPercent              rustFloat32 `json:"cpu_percent"`
	VcpuTimeNs              uint64      `json:"vcpu_time_ns"`
	MemoryBytes             uint64      `json:"memory_bytes"`
	MemoryAvailableBytes    *uint64     `json:"memory_available_bytes"`
	MemoryHostResidentBytes *uint64     `json:"memory_host_resident_bytes"`
	MemoryLimitBytes        uint64      `json:"memory_limit_bytes"`
	DiskReadBytes           uint64      `json:"disk_read_bytes"`
	DiskWriteBytes          uint64      `json:"disk_write_bytes"`
	NetRxBytes              uint64      `json:"net_rx_bytes"`
	NetTxBytes              uint64      `json:"net_tx_bytes"`
	UpperUsedBytes          *uint64     `json:"upper_used_bytes"`
	UpperFreeBytes          *uint64     `json:"upper_free_bytes"`
	UpperHostAllocatedBytes *uint64     `json:"upper_host_allocated_bytes"`
	UptimeSecs              rustFloat   `json:"uptime_secs"`
}

// rootDiskBytes is the fake managed root disk size (4096 MiB default).
const rootDiskBytes = 4096 << 20

// clockTicks is USER_HZ, the unit of utime/stime in /proc/<pid>/stat.
const clockTicks = 100

// sample builds plausible numbers from the box's real processes and guest root.
func (a *app) sample(b *Sandbox) (metricsEntry, error) {
	if b.StartedAt == nil {
		return metricsEntry{}, fmt.Errorf("no metrics recorded for sandbox %q", b.Name)
	}
	cpus := b.Config.Cpus
	limit := uint64(b.Config.MemoryMiB) << 20
	e := metricsEntry{Name: b.Name, State: "exited", Cpus: &cpus, Timestamp: rfc3339(a.now), MemoryLimitBytes: limit}
	end := a.now
	if b.Status == statusRunning {
		e.State = "running"
		e.MemoryBytes, e.VcpuTimeNs = boxUsage(b)
		avail := limit - min(limit, e.MemoryBytes)
		resident := e.MemoryBytes
		e.MemoryAvailableBytes, e.MemoryHostResidentBytes = &avail, &resident
	} else if b.StoppedAt != nil {
		end = *b.StoppedAt
	}
	uptime := max(end.Sub(*b.StartedAt), 0)
	e.UptimeSecs = rustFloat(uptime.Seconds())
	if uptime > 0 {
		e.CPUPercent = rustFloat32(float64(e.VcpuTimeNs) / float64(uptime.Nanoseconds()) * 100)
	}
	used := dirUsage(a.boxRoot(b.Name))
	free := uint64(rootDiskBytes) - min(uint64(rootDiskBytes), used)
	e.UpperUsedBytes, e.UpperFreeBytes, e.UpperHostAllocatedBytes = &used, &free, &used
	e.DiskWriteBytes = used
	return e, nil
}

// boxUsage sums RSS and CPU time over the processes of the box's pid namespace.
func boxUsage(b *Sandbox) (rss, cpuNs uint64) {
	if b.Runtime == nil {
		return 0, 0
	}
	ns, ok := pidNamespace(b.Runtime.InitPid)
	if !ok {
		return 0, 0
	}
	for _, pid := range nsProcesses(ns) {
		rss += rssBytes(pid)
		if info, ok := readProcStat(pid); ok {
			cpuNs += (info.utime + info.stime) * uint64(time.Second) / clockTicks
		}
	}
	return rss, cpuNs
}

// dirUsage is a bounded `du` of the guest root (large trees are estimated).
func dirUsage(root string) uint64 {
	var total uint64
	n := 0
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if n++; n > 20000 {
			return filepath.SkipAll
		}
		if info, err := d.Info(); err == nil && info.Mode().IsRegular() {
			total += uint64(info.Size())
		}
		return nil
	})
	return total
}

// cmdMetrics implements `msb metrics [NAME] [--format json] [--follow]`.
func cmdMetrics(args []string) error {
	p, err := metricsSpec.parse(args)
	if err != nil {
		return err
	}
	if p.has("format") {
		if err := checkFormat(p); err != nil {
			return err
		}
	}
	if p.has("watch") && !isTerminal(1) {
		return fmt.Errorf("--watch requires a terminal; use --follow for non-interactive output")
	}
	interval := time.Second
	if p.has("interval") {
		if interval, err = parseShortDuration(p.get("interval")); err != nil {
			return err
		}
		if interval < 100*time.Millisecond {
			return fmt.Errorf("--interval must be at least 100ms")
		}
	}
	a, err := newApp()
	if err != nil {
		return err
	}
	if p.has("follow") {
		return a.followMetrics(p, interval)
	}
	var rows []metricsEntry
	if err := a.locked(func() error { rows, err = a.collectMetrics(p); return err }); err != nil {
		return err
	}
	switch {
	case p.has("format") && len(p.pos) == 1:
		return printJSON(rows[0])
	case p.has("format"):
		return printJSON(rows)
	}
	printMetricsTable(rows)
	return nil
}

func (a *app) collectMetrics(p *parsedArgs) ([]metricsEntry, error) {
	if len(p.pos) == 1 {
		b, err := a.box(p.pos[0])
		if err != nil {
			return nil, err
		}
		e, err := a.sample(b)
		return []metricsEntry{e}, err
	}
	rows := []metricsEntry{}
	for _, b := range a.st.Sandboxes {
		if b.Status != statusRunning && !p.has("all") {
			continue
		}
		if e, err := a.sample(b); err == nil {
			rows = append(rows, e)
		}
	}
	sortMetrics(rows, p.get("sort"))
	return rows, nil
}

func sortMetrics(rows []metricsEntry, by string) {
	sort.Slice(rows, func(i, j int) bool {
		switch by {
		case "cpu":
			return rows[i].CPUPercent > rows[j].CPUPercent
		case "mem":
			return rows[i].MemoryBytes > rows[j].MemoryBytes
		}
		return rows[i].Name < rows[j].Name
	})
}

// followMetrics prints JSON Lines every interval until interrupted.
func (a *app) followMetrics(p *parsedArgs, interval time.Duration) error {
	for {
		var rows []metricsEntry
		err := a.locked(func() error {
			var err error
			rows, err = a.collectMetrics(p)
			return err
		})
		if err != nil {
			return err
		}
		for _, r := range rows {
			line, err := compactJSON(r)
			if err != nil {
				return err
			}
			if _, err := os.Stdout.Write(line); err != nil {
				return nil // reader went away
			}
		}
		time.Sleep(interval)
		if now, err := a.knobs.now(); err == nil {
			a.now = now
		}
	}
}

func printMetricsTable(rows []metricsEntry) {
	if len(rows) == 0 {
		fmt.Fprintln(os.Stderr, "No running sandboxes.")
		return
	}
	table := [][]string{{"NAME", "STATE", "CPU", "MEM", "DISK R/W /s", "NET RX/TX /s", "UPTIME"}}
	for _, r := range rows {
		mem := fmt.Sprintf("%s / %s", formatBytes(r.MemoryBytes), formatBytes(r.MemoryLimitBytes))
		uptime := formatUptime(time.Duration(float64(r.UptimeSecs) * float64(time.Second)))
		if r.State == "exited" {
			table = append(table, []string{r.Name, r.State, "—", mem,
				fmt.Sprintf("%s / %s total", formatBytes(r.DiskReadBytes), formatBytes(r.DiskWriteBytes)),
				fmt.Sprintf("%s / %s total", formatBytes(r.NetRxBytes), formatBytes(r.NetTxBytes)),
				"ran " + uptime})
			continue
		}
		table = append(table, []string{r.Name, r.State, fmt.Sprintf("%.2f / %dc", float64(r.CPUPercent)/100, *r.Cpus), mem,
			"0 B / 0 B", "0 B / 0 B", uptime})
	}
	printTable(table)
}
