package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

const module = "github.com/asb-dev/asb"

// shortPkg drops the module path: "sandbox", "app/sqlite", "." for the root.
func shortPkg(p string) string {
	if p == module {
		return "."
	}
	return strings.TrimPrefix(p, module+"/")
}

// figure formats a value with about three significant digits, so
// microsecond and per-second figures both read well.
func figure(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 100 || v <= -100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10 || v <= -10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v >= 1 || v <= -1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

func (r Row) cells() []string {
	c := []string{shortPkg(r.Pkg), r.Name, figure(r.Value) + " " + r.Unit, "—", "—", "none"}
	if r.Unit == "" {
		c[2] = "—"
	}
	if r.HasBaseline() {
		// A sibling baseline reads best without its parent's name.
		base := r.Baseline
		if parent, sep, ok := isBaseline(base); ok && sep == '/' {
			base = strings.TrimPrefix(base, parent+"/")
		}
		c[3], c[4] = base, figure(r.BaselineValue)+" "+r.Unit
		c[5] = "n/a"
		if r.BaselineValue != 0 {
			c[5] = strconv.FormatFloat(r.Ratio(), 'f', 2, 64) + "x"
		}
	}
	return c
}

var header = []string{"package", "benchmark", "figure", "baseline", "baseline figure", "ratio"}

// WriteText writes the rows as an aligned plain-text table.
func WriteText(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r.cells(), "\t"))
	}
	return tw.Flush()
}

// WriteMarkdown writes the rows as a Markdown table.
func WriteMarkdown(w io.Writer, rows []Row) error {
	line := func(cells []string) string {
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		return "| " + strings.Join(cells, " | ") + " |\n"
	}
	var b strings.Builder
	b.WriteString(line(append([]string(nil), header...)))
	b.WriteString("|" + strings.Repeat("---|", len(header)) + "\n")
	for _, r := range rows {
		b.WriteString(line(r.cells()))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
