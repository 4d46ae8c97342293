package main

import (
	"bufio"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Metric is one "<value> <unit>" pair of a benchmark result line.
type Metric struct {
	Value float64
	Unit  string
}

// Result is one benchmark result line of `go test -bench`.
type Result struct {
	Pkg string
	// Name is the benchmark's full name without the "Benchmark" prefix
	// and the -GOMAXPROCS suffix, e.g. "ExecRoundTrip/xcrypto-persistent".
	Name    string
	N       int64
	Metrics []Metric
}

// Get returns the value of the metric with the given unit.
func (r Result) Get(unit string) (float64, bool) {
	for _, m := range r.Metrics {
		if m.Unit == unit {
			return m.Value, true
		}
	}
	return 0, false
}

// Outcome is what one `go test` run said besides its results.
type Outcome struct {
	Results []Result
	// Failed lists the packages whose tests or benchmarks failed.
	Failed []string
	// Skipped lists "--- SKIP" benchmark lines with their reason.
	Skipped []string
}

var (
	procSuffix = regexp.MustCompile(`-\d+$`)
	resultLine = regexp.MustCompile(`^\s*(\d+)\s+(.*)$`)
)

// Parse reads `go test -bench` output. Besides the plain layout
// ("BenchmarkX-2 <tab> N <tab> v unit ..."), it copes with a benchmark
// name printed alone on its line and its figures on the next, which is
// what go test does when the benchmark writes to stdout while it runs.
func Parse(r io.Reader) (Outcome, error) {
	var out Outcome
	pkg, pending := "", ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "pkg: "):
			pkg, pending = strings.TrimSpace(strings.TrimPrefix(line, "pkg: ")), ""
			continue
		case strings.HasPrefix(line, "FAIL\t") || strings.HasPrefix(line, "--- FAIL: Benchmark"):
			// "FAIL\tpkg\t1.2s" or "FAIL\tpkg [build failed]".
			if f := strings.Fields(line); len(f) >= 2 && strings.HasPrefix(line, "FAIL\t") {
				out.Failed = append(out.Failed, f[1])
			}
			continue
		case strings.HasPrefix(strings.TrimSpace(line), "--- SKIP: Benchmark"):
			out.Skipped = append(out.Skipped, strings.TrimSpace(line))
			continue
		}
		name, rest := "", ""
		if strings.HasPrefix(line, "Benchmark") {
			fields := strings.SplitN(line, "\t", 2)
			name = strings.TrimSpace(fields[0])
			if strings.ContainsAny(name, " ") {
				pending = ""
				continue // prose that happens to start with the word
			}
			if len(fields) == 2 {
				rest = fields[1]
			}
			if strings.TrimSpace(rest) == "" {
				pending = name
				continue
			}
		} else if pending != "" && resultLine.MatchString(line) {
			name, rest = pending, line
		} else {
			continue
		}
		res, ok := parseFigures(pkg, name, rest)
		if ok {
			out.Results = append(out.Results, res)
			pending = ""
		} else if name != pending {
			pending = ""
		}
	}
	return out, sc.Err()
}

// parseFigures parses "N  v1 unit1  v2 unit2 ..." after a benchmark name.
func parseFigures(pkg, name, rest string) (Result, bool) {
	f := strings.Fields(rest)
	if len(f) < 3 || len(f)%2 != 1 {
		return Result{}, false
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return Result{}, false
	}
	res := Result{Pkg: pkg, Name: procSuffix.ReplaceAllString(strings.TrimPrefix(name, "Benchmark"), ""), N: n}
	for i := 1; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return Result{}, false
		}
		res.Metrics = append(res.Metrics, Metric{Value: v, Unit: f[i+1]})
	}
	return res, true
}
