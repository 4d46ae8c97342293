package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/asb-dev/asb/app"
)

// fleetEntry is one session of /fleet.json.
type fleetEntry struct {
	app.SessionView
	State string `json:"state"`
}

func runMonitor(ctx context.Context, env *environment, args []string) int {
	fs := clientFlagSet(env, "monitor", "[flags]", "Print the sessions of a running controller as a table, those waiting for an answer first.")
	all := fs.Bool("all", false, "include closed (torn down) sessions")
	asJSON := fs.Bool("json", false, "print the controller's JSON as it came")
	limit := fs.Int("limit", 200, "list at most this many sessions (1-1000)")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(env.stderr, "asb monitor: unexpected argument %q\n", pos[0])
		return 2
	}
	c, code, ok := connectClient(env, "monitor")
	if !ok {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	q := url.Values{"limit": {fmt.Sprint(*limit)}}
	if *all {
		q.Set("all", "true")
	}
	var raw json.RawMessage
	if err := c.call(ctx, "GET", "/fleet.json", q, nil, &raw); err != nil {
		fmt.Fprintf(env.stderr, "asb monitor: %v\n", err)
		return 1
	}
	if *asJSON {
		fmt.Fprintf(env.stdout, "%s\n", raw)
		return 0
	}
	var fleet struct {
		Sessions []fleetEntry `json:"sessions"`
	}
	if err := json.Unmarshal(raw, &fleet); err != nil {
		fmt.Fprintf(env.stderr, "asb monitor: the controller's answer is not the JSON expected: %v\n", err)
		return 1
	}
	printFleet(env.stdout, fleet.Sessions, time.Now(), *all)
	return 0
}

// stateRank orders the table: what needs a person first, then what is
// moving, then the rest.
func stateRank(state string) int {
	switch state {
	case string(app.StateWaiting):
		return 0
	case string(app.StateRunning), string(app.StateStarting):
		return 1
	case string(app.StateQueued):
		return 2
	case string(app.SessionClosed):
		return 4
	}
	return 3
}

func printFleet(w io.Writer, sessions []fleetEntry, now time.Time, all bool) {
	if len(sessions) == 0 {
		if all {
			fmt.Fprintln(w, "No sessions.")
		} else {
			fmt.Fprintln(w, "No active sessions. (--all also lists closed ones.)")
		}
		return
	}
	sort.SliceStable(sessions, func(i, j int) bool { return stateRank(sessions[i].State) < stateRank(sessions[j].State) })

	counts := map[string]int{}
	for _, s := range sessions {
		counts[s.State]++
	}
	var parts []string
	for _, st := range []string{"waiting", "running", "starting", "queued", "done", "failed", "cancelled", "idle", "closed"} {
		if n := counts[st]; n > 0 {
			label := st
			if st == "waiting" {
				label = "waiting for an answer"
			}
			parts = append(parts, fmt.Sprintf("%d %s", n, label))
		}
	}
	noun := "sessions"
	if len(sessions) == 1 {
		noun = "session"
	}
	fmt.Fprintf(w, "%d %s: %s.\n\n", len(sessions), noun, strings.Join(parts, ", "))

	header := []string{"STATE", "SESSION", "AGE", "QUEUED", "REPO", "TASK"}
	rows := [][]string{header}
	for _, s := range sessions {
		state := s.State
		if state == string(app.StateWaiting) {
			state = "WAITING" // the one state that needs a person
		}
		if s.Session.Pinned {
			state += "*"
		}
		queued := "-"
		if s.Queued > 0 {
			queued = fmt.Sprint(s.Queued)
		}
		// Titles and questions come from people and agents: sanitize keeps
		// their escape sequences off the terminal.
		rows = append(rows, []string{state, string(s.Session.ID), age(now.Sub(s.Session.CreatedAt)), queued,
			sanitize(repoOf(s.Session)), sanitize(clipLine(s.Session.Title, 60))})
	}
	widths := make([]int, len(header))
	for _, r := range rows {
		for i, cell := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	pinned := false
	for i, r := range rows {
		var b strings.Builder
		for j, cell := range r {
			b.WriteString(cell)
			if j < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[j]-utf8.RuneCountInString(cell)+2))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		if i == 0 {
			continue
		}
		s := sessions[i-1]
		pinned = pinned || s.Session.Pinned
		if s.Question != "" {
			fmt.Fprintf(w, "%s? %s\n", strings.Repeat(" ", widths[0]+2), sanitize(clipLine(s.Question, 200)))
		}
	}
	if counts["waiting"] > 0 {
		fmt.Fprintln(w, "\nWaiting sessions need an answer: POST /resume.json {\"session\", \"message\"}, the dashboard, or MCP resume.")
	}
	if pinned {
		fmt.Fprintln(w, "* pinned: the box is never reaped.")
	}
}

// repoOf names the session's repository (and how many more there are).
func repoOf(s app.Session) string {
	if len(s.Sources) > 0 {
		name := s.Sources[0].Repo
		if name == "" {
			name = s.Sources[0].Dir + " (local)"
		}
		if len(s.Sources) > 1 {
			name += fmt.Sprintf(" +%d", len(s.Sources)-1)
		}
		return name
	}
	switch {
	case s.Origin.Repo != "":
		return s.Origin.Repo
	}
	return "-"
}

// age renders a duration the way people say it: 45s, 12m, 3h, 2d.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
