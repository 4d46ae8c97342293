package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// rfc3339 renders chrono's DateTime<Utc>::to_rfc3339(): `+00:00` offset and
// 0, 3, 6 or 9 fractional digits (SecondsFormat::AutoSi).
func rfc3339(t time.Time) string {
	t = t.UTC()
	base := t.Format("2006-01-02T15:04:05")
	ns := t.Nanosecond()
	switch {
	case ns == 0:
	case ns%1_000_000 == 0:
		base += fmt.Sprintf(".%03d", ns/1_000_000)
	case ns%1_000 == 0:
		base += fmt.Sprintf(".%06d", ns/1_000)
	default:
		base += fmt.Sprintf(".%09d", ns)
	}
	return base + "+00:00"
}

// printJSON writes v like serde_json::to_string_pretty: 2-space indent, no
// HTML escaping, then a newline.
func printJSON(v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode json: %w", err)
	}
	_, err := os.Stdout.Write(buf.Bytes())
	return err
}

// compactJSON is one JSON Lines record (metrics --follow).
func compactJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode json: %w", err)
	}
	return buf.Bytes(), nil
}

// rustFloat marshals like serde_json: a float always has a fractional part
// (`0.0`, not `0`).
type rustFloat float64

func (f rustFloat) MarshalJSON() ([]byte, error) {
	s := strconv.FormatFloat(float64(f), 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return []byte(s), nil
}

// rustFloat32 is an f32 field (shortest f32 representation).
type rustFloat32 float32

func (f rustFloat32) MarshalJSON() ([]byte, error) {
	s := strconv.FormatFloat(float64(f), 'f', -1, 32)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return []byte(s), nil
}

// checkFormat accepts only `--format json`, like msb.
func checkFormat(p *parsedArgs) error {
	if f := p.get("format"); f != "json" {
		return usageErr(p.cmd, "invalid value '%s' for '--format <FORMAT>'\n  [possible values: json]", f)
	}
	return nil
}

// printTable prints left-aligned columns padded to the widest cell plus 4
// spaces (msb's ui table), without trailing blanks.
func printTable(rows [][]string) {
	if len(rows) == 0 {
		return
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			if n := len([]rune(c)); n > widths[i] {
				widths[i] = n
			}
		}
	}
	var sb strings.Builder
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			line.WriteString(c)
			if i < len(r)-1 {
				line.WriteString(strings.Repeat(" ", widths[i]-len([]rune(c))+4))
			}
		}
		sb.WriteString(strings.TrimRight(line.String(), " "))
		sb.WriteByte('\n')
	}
	fmt.Print(sb.String())
}

// formatBytes is msb's format_bytes: `B`, then one decimal with KiB/MiB/GiB/TiB.
func formatBytes(n uint64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	for _, unit := range []string{"KiB", "MiB", "GiB", "TiB"} {
		v /= 1024
		if v < 1024 || unit == "TiB" {
			return fmt.Sprintf("%.1f %s", v, unit)
		}
	}
	return ""
}

// formatMiB renders a memory size for ps: `512 MiB` or `1 GiB`.
func formatMiB(mib int) string {
	if mib >= 1024 && mib%1024 == 0 {
		return fmt.Sprintf("%d GiB", mib/1024)
	}
	return fmt.Sprintf("%d MiB", mib)
}

// formatUptime renders durations like `43m18s`, `2m5s`, `1h0m5s`.
func formatUptime(d time.Duration) string {
	s := int64(d / time.Second)
	h, m, sec := s/3600, (s%3600)/60, s%60
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%dm%ds", h, m, sec)
	case m > 0:
		return fmt.Sprintf("%dm%ds", m, sec)
	}
	return fmt.Sprintf("%ds", sec)
}

// truncate shortens a table cell to n runes with an ellipsis.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func localTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}
