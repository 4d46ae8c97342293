package main

import (
	"strings"
)

// Row is one line of the table: a figure of a benchmark against the same
// figure of its baseline, both measured in the same run.
type Row struct {
	Pkg, Name string
	Unit      string
	Value     float64
	// Baseline names what the figure is compared with ("" when nothing is).
	Baseline      string
	BaselineValue float64
}

// HasBaseline reports whether the row has a baseline figure.
func (r Row) HasBaseline() bool { return r.Baseline != "" }

// Ratio is the figure divided by its baseline's (0 without one).
func (r Row) Ratio() float64 {
	if !r.HasBaseline() || r.BaselineValue == 0 {
		return 0
	}
	return r.Value / r.BaselineValue
}

const baselineWord = "baseline"

// standardUnits are the figures go test measures by itself; a pair of
// benchmarks compares them only when neither reports a figure of its own.
var standardUnits = map[string]bool{"ns/op": true, "B/op": true, "allocs/op": true, "MB/s": true}

// isBaseline reports whether a benchmark is a baseline: its last name
// element (after "/" or, for a top-level benchmark, after "_") starts with
// "baseline".
func isBaseline(name string) (parent string, sep byte, ok bool) {
	if i := strings.LastIndexByte(name, '/'); i >= 0 && strings.HasPrefix(name[i+1:], baselineWord) {
		return name[:i], '/', true
	}
	if i := strings.LastIndexByte(name, '_'); i >= 0 && !strings.Contains(name, "/") && strings.HasPrefix(name[i+1:], baselineWord) {
		return name[:i], '_', true
	}
	return "", 0, false
}

// Pair turns results into rows by the two naming conventions:
//
//  1. A metric "baseline-<unit>" on a result line is the baseline of the
//     metric "<unit>" on the same line (the benchmark measured both).
//  2. A benchmark whose last name element starts with "baseline" is the
//     baseline of its siblings: "X/baseline-foo" of every other "X/..."
//     sub-benchmark, and "X_baseline" of the top-level benchmark "X".
//     They are compared on the figures both report, their own metrics
//     when they share any (ratio metrics "x-..." aside), else ns/op.
//
// A benchmark paired by neither still gets a row, without a baseline, so
// the table shows what lacks one.
func Pair(results []Result) []Row {
	var rows []Row
	baselines := map[string][]Result{} // pkg + "\x00" + sibling name → baselines
	for _, r := range results {
		parent, sep, ok := isBaseline(r.Name)
		if !ok {
			continue
		}
		for _, s := range results {
			if s.Pkg != r.Pkg || s.Name == r.Name {
				continue
			}
			if _, _, sb := isBaseline(s.Name); sb {
				continue
			}
			sibling := sep == '/' && strings.HasPrefix(s.Name, parent+"/") && !strings.Contains(s.Name[len(parent)+1:], "/") ||
				sep == '_' && s.Name == parent
			if sibling {
				baselines[s.Pkg+"\x00"+s.Name] = append(baselines[s.Pkg+"\x00"+s.Name], r)
			}
		}
	}
	for _, r := range results {
		if _, _, ok := isBaseline(r.Name); ok {
			continue
		}
		n := len(rows)
		for _, m := range r.Metrics {
			if strings.HasPrefix(m.Unit, baselineWord+"-") {
				continue
			}
			if b, ok := r.Get(baselineWord + "-" + m.Unit); ok {
				rows = append(rows, Row{Pkg: r.Pkg, Name: r.Name, Unit: m.Unit, Value: m.Value,
					Baseline: baselineWord + "-" + m.Unit, BaselineValue: b})
			}
		}
		for _, b := range baselines[r.Pkg+"\x00"+r.Name] {
			for _, unit := range sharedUnits(r, b) {
				v, _ := r.Get(unit)
				bv, _ := b.Get(unit)
				rows = append(rows, Row{Pkg: r.Pkg, Name: r.Name, Unit: unit, Value: v, Baseline: b.Name, BaselineValue: bv})
			}
		}
		if len(rows) == n {
			row := Row{Pkg: r.Pkg, Name: r.Name}
			if len(r.Metrics) > 0 {
				row.Unit, row.Value = r.Metrics[0].Unit, r.Metrics[0].Value
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// sharedUnits are the figures a benchmark and its baseline sibling are
// compared on.
func sharedUnits(r, b Result) []string {
	var own, std []string
	for _, m := range r.Metrics {
		if _, ok := b.Get(m.Unit); !ok || strings.HasPrefix(m.Unit, "x-") || strings.HasPrefix(m.Unit, baselineWord+"-") {
			continue
		}
		if standardUnits[m.Unit] {
			if m.Unit == "ns/op" {
				std = append(std, m.Unit)
			}
			continue
		}
		own = append(own, m.Unit)
	}
	if len(own) > 0 {
		return own
	}
	return std
}
