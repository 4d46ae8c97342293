package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/asb-dev/asb/app"
)

// askTimeout bounds one question; the controller's co-pilot stops at
// ASK_TIMEOUT_MS (default 45 s) and answers with what it has.
const askTimeout = 3 * time.Minute

func runAsk(ctx context.Context, env *environment, args []string) int {
	fs := clientFlagSet(env, "ask", "[flags] SESSION [QUESTION...]",
		"Ask a session's read-only co-pilot about its work: it reads the workspace, the diff and the agent's log,\n"+
			"and never pauses or changes the run. With no QUESTION, reads one question per line from stdin; later\n"+
			"questions continue the same co-pilot thread. Put -- before a question that starts with '-'.")
	newThread := fs.Bool("new-thread", false, "start a fresh co-pilot thread instead of continuing the last one")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		fmt.Fprintln(env.stderr, "asb ask: give a SESSION (an id like ses_…; 'asb monitor' lists them)")
		return 2
	}
	id, ok := checkSessionArg(env, "ask", pos[0])
	if !ok {
		return 2
	}
	c, code, ok := connectClient(env, "ask")
	if !ok {
		return code
	}
	if len(pos) > 1 {
		q := strings.Join(pos[1:], " ")
		if err := askOne(ctx, c, env.stdout, id, q, *newThread, false); err != nil {
			fmt.Fprintf(env.stderr, "asb ask: %v\n", err)
			return 1
		}
		return 0
	}

	in := env.stdin
	if in == nil {
		in = strings.NewReader("")
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	first, failed := true, false
	for sc.Scan() {
		q := strings.TrimSpace(sc.Text())
		if q == "" {
			continue
		}
		err := askOne(ctx, c, env.stdout, id, q, *newThread && first, true)
		first = false
		if err == nil {
			continue
		}
		fmt.Fprintf(env.stderr, "asb ask: %v\n", err)
		failed = true
		// A refused question (too long, not text) spoils only itself; any
		// other failure (no such session, no box, controller down) would
		// spoil every line after it too.
		var ae *apiError
		if !errors.As(err, &ae) || (ae.Status != http.StatusBadRequest && ae.Status != http.StatusRequestEntityTooLarge) {
			return 1
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(env.stderr, "asb ask: reading questions: %v\n", err)
		return 1
	}
	if failed {
		return 1
	}
	return 0
}

// askOne asks one question and prints the answer; echo repeats the
// question first, so answers read from stdin stay paired with it.
func askOne(ctx context.Context, c *apiClient, out io.Writer, id app.SessionID, q string, newThread, echo bool) error {
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	var ans struct {
		Answer   string `json:"answer"`
		TimedOut bool   `json:"timed_out"`
	}
	body := map[string]any{"session": id, "question": q, "newThread": newThread}
	if err := c.call(ctx, "POST", "/ask.json", nil, body, &ans); err != nil {
		return err
	}
	if echo {
		fmt.Fprintf(out, "> %s\n", sanitize(q))
	}
	fmt.Fprintln(out, strings.TrimRight(sanitizeMultiline(ans.Answer), "\n"))
	if ans.TimedOut {
		fmt.Fprintln(out, "(the co-pilot ran out of time; the answer may be partial)")
	}
	if echo {
		fmt.Fprintln(out)
	}
	return nil
}
