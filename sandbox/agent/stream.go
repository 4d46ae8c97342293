package agent

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// SplitLines cuts buf into its complete lines, without their "\n" (or
// "\r\n"), and reports how many bytes those lines span. A reader that
// fetches a growing event file by offset advances its offset by n and
// keeps the incomplete tail for the next read, so no line is seen twice or
// torn in half.
func SplitLines(buf []byte) (lines [][]byte, n int) {
	for {
		i := bytes.IndexByte(buf[n:], '\n')
		if i < 0 {
			return lines, n
		}
		line := buf[n : n+i]
		lines = append(lines, bytes.TrimSuffix(line, []byte("\r")))
		n += i + 1
	}
}

// ParseStream reads a whole stream-json stream from r (a finished run's
// events file). Blank lines are skipped, and so is a line that does not
// parse: its error, with its line number, is joined into the returned
// error while the records of every other line are still returned. A last
// line without a newline is parsed too. An error reading r ends the
// stream and is returned as well.
func ParseStream(r io.Reader) ([]Event, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		events []Event
		errs   []error
	)
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			evs, perr := ParseAll(line)
			if perr != nil {
				errs = append(errs, fmt.Errorf("line %d: %w", lineNo, perr))
			}
			events = append(events, evs...)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			errs = append(errs, err)
			break
		}
	}
	return events, errors.Join(errs...)
}
