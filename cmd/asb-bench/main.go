// Command asb-bench runs every benchmark of the project once and prints
// one table: each figure, the figure of its baseline measured in the same
// run, and their ratio (figure ÷ baseline). `make bench` runs it.
//
// Baselines are found by name (see Pair): a metric "baseline-<unit>" next
// to "<unit>" on the same result line, or a sibling benchmark whose last
// name element starts with "baseline" ("X/baseline-foo", "X_baseline").
//
//	go run ./cmd/asb-bench                      # run and print the table
//	go run ./cmd/asb-bench -in bench.txt -md    # table of saved output
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "asb-bench:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("asb-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	in := fs.String("in", "", "read saved `go test -bench` output from this file instead of running the benchmarks")
	raw := fs.String("raw", "", "also save the raw `go test` output to this file")
	benchtime := fs.String("benchtime", "1s", "go test -benchtime for every benchmark")
	bench := fs.String("bench", ".", "go test -bench pattern")
	timeout := fs.Duration("timeout", 15*time.Minute, "bound on the whole run (at most 1h)")
	md := fs.Bool("md", false, "print a Markdown table")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pkgs := fs.Args()
	if len(pkgs) == 0 {
		pkgs = []string{"./..."}
	}
	if *timeout <= 0 || *timeout > time.Hour {
		return fmt.Errorf("-timeout must be in (0, 1h], got %v", *timeout)
	}

	var output []byte
	if *in != "" {
		b, err := os.ReadFile(*in)
		if err != nil {
			return err
		}
		output = b
	} else {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		b, err := runBenchmarks(ctx, *bench, *benchtime, *timeout, pkgs, stderr)
		output = b
		if err != nil && len(b) == 0 {
			return err
		}
	}
	if *raw != "" {
		if err := os.WriteFile(*raw, output, 0o644); err != nil {
			return err
		}
	}
	out, err := Parse(bytes.NewReader(output))
	if err != nil {
		return err
	}
	if len(out.Results) == 0 {
		return errors.New("no benchmark results in the output")
	}
	rows := Pair(out.Results)
	if *md {
		err = WriteMarkdown(stdout, rows)
	} else {
		err = WriteText(stdout, rows)
	}
	if err != nil {
		return err
	}
	for _, s := range out.Skipped {
		fmt.Fprintln(stdout, "skipped:", s)
	}
	missing := 0
	for _, r := range rows {
		if !r.HasBaseline() {
			missing++
		}
	}
	if missing > 0 {
		fmt.Fprintf(stdout, "%d figure(s) without a baseline\n", missing)
	}
	if len(out.Failed) > 0 {
		return fmt.Errorf("benchmarks failed in %s", strings.Join(out.Failed, ", "))
	}
	return nil
}

// runBenchmarks runs go test's benchmarks (no tests) and returns its
// output, echoing each package's verdict to progress as it lands.
func runBenchmarks(ctx context.Context, bench, benchtime string, timeout time.Duration, pkgs []string, progress io.Writer) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout+30*time.Second)
	defer cancel()
	args := append([]string{"test", "-run", "^$", "-bench", bench, "-benchmem", "-count", "1",
		"-benchtime", benchtime, "-timeout", timeout.String()}, pkgs...)
	cmd := exec.CommandContext(ctx, goBin(), args...)
	cmd.WaitDelay = 10 * time.Second
	// One writer for both streams, so exec copies them one at a time.
	var buf bytes.Buffer
	w := &verdicts{w: progress, all: &buf}
	cmd.Stdout, cmd.Stderr = w, w
	fmt.Fprintln(progress, "running: go", strings.Join(args, " "))
	err := cmd.Run()
	return buf.Bytes(), err
}

func goBin() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

// verdicts keeps go test's output and passes its "ok"/"FAIL" lines
// through, so a long run shows progress without the noise of every
// benchmark.
type verdicts struct {
	w    io.Writer
	all  *bytes.Buffer
	line []byte
}

func (v *verdicts) Write(p []byte) (int, error) {
	v.all.Write(p)
	for _, c := range p {
		if c != '\n' {
			v.line = append(v.line, c)
			continue
		}
		s := string(v.line)
		v.line = v.line[:0]
		if strings.HasPrefix(s, "ok ") || strings.HasPrefix(s, "FAIL") || strings.HasPrefix(s, "--- FAIL") {
			fmt.Fprintln(v.w, s)
		}
	}
	return len(p), nil
}
