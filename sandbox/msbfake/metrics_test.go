package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// metricsFields is the 0.6.9 field order of a metrics sample.
const metricsFields = `"name","state","cpus","timestamp","cpu_percent","vcpu_time_ns","memory_bytes","memory_available_bytes","memory_host_resident_bytes","memory_limit_bytes","disk_read_bytes","disk_write_bytes","net_rx_bytes","net_tx_bytes","upper_used_bytes","upper_free_bytes","upper_host_allocated_bytes","uptime_secs"`

func fieldOrder(t *testing.T, obj string) string {
	t.Helper()
	var keys []string
	for _, m := range regexp.MustCompile(`(?m)^\s*("[a-z_]+"):`).FindAllStringSubmatch(obj, -1) {
		keys = append(keys, m[1])
	}
	return strings.Join(keys, ",")
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.env = []string{"FAKE_MSB_NOW=2026-08-15T00:00:00Z"}
	e.box("m1", "-m", "1G", "-c", "2")
	e.box("m2")
	e.ok("stop", "m2")

	r := e.at("90s", "metrics", "m1", "--format", "json")
	if got := fieldOrder(t, r.stdout); got != metricsFields {
		t.Fatalf("metrics fields:\n%s\nwant\n%s", got, metricsFields)
	}
	var s struct {
		Name       string  `json:"name"`
		State      string  `json:"state"`
		Cpus       int     `json:"cpus"`
		Timestamp  string  `json:"timestamp"`
		Limit      uint64  `json:"memory_limit_bytes"`
		Memory     uint64  `json:"memory_bytes"`
		UptimeSecs float64 `json:"uptime_secs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatal(err)
	}
	if s.Name != "m1" || s.State != "running" || s.Cpus != 2 || s.Limit != 1<<30 || s.Memory == 0 ||
		s.UptimeSecs != 90 || s.Timestamp != "2026-08-15T00:01:30+00:00" {
		t.Errorf("sample: %+v", s)
	}
	if !strings.Contains(r.stdout, `"uptime_secs": 90.0`) {
		t.Errorf("floats must render like serde (90.0): %s", r.stdout)
	}

	var all []map[string]any
	if err := json.Unmarshal([]byte(e.ok("metrics", "--format", "json").stdout), &all); err != nil || len(all) != 1 {
		t.Fatalf("metrics lists running boxes only: %v %v", all, err)
	}
	if err := json.Unmarshal([]byte(e.ok("metrics", "-a", "--format", "json").stdout), &all); err != nil || len(all) != 2 || all[1]["state"] != "exited" {
		t.Fatalf("metrics -a: %v %v", all, err)
	}
	if got := e.ok("metrics", "m2", "--format", "json").stdout; !strings.Contains(got, `"state": "exited"`) {
		t.Errorf("metrics NAME of a stopped box: %s", got)
	}
	wantCode(t, e.run("metrics", "nope"), 1)

	table := e.ok("metrics", "-a").stdout
	lines := strings.Split(strings.TrimRight(table, "\n"), "\n")
	if len(lines) != 3 || !regexp.MustCompile(`^NAME +STATE +CPU +MEM +DISK R/W /s +NET RX/TX /s +UPTIME$`).MatchString(lines[0]) {
		t.Fatalf("metrics table:\n%s", table)
	}
	if !strings.Contains(lines[1], "running") || !strings.Contains(lines[1], " / 2c") || !strings.Contains(lines[1], "/ 1.0 GiB") {
		t.Errorf("running row: %q", lines[1])
	}
	if !strings.Contains(lines[2], "exited") || !strings.Contains(lines[2], "—") || !strings.Contains(lines[2], "total") || !strings.Contains(lines[2], "ran ") {
		t.Errorf("exited row: %q", lines[2])
	}
	wantStderr(t, e.run("metrics", "--watch"), "--watch requires a terminal")
}

func TestMetricsFollow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.box("f1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, msbBin, "metrics", "--follow", "--interval", "100ms", "--format", "json")
	cmd.Env = append(os.Environ(), "MSB_HOME="+e.home)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for i := 0; i < 2; i++ {
		if !sc.Scan() {
			t.Fatalf("metrics --follow ended early: %v", sc.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m["name"] != "f1" || strings.Contains(sc.Text(), "\n  ") {
			t.Fatalf("JSON Lines record %d: %q %v", i, sc.Text(), err)
		}
	}
	cancel()
	_ = cmd.Wait()
	wantCode(t, e.run("metrics", "--interval", "10ms", "--follow"), 1)
}
