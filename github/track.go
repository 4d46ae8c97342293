package github

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/asb-dev/asb/app"
)

// MaxTrackingBytes bounds a rendered tracking comment. GitHub refuses
// comment bodies over 65536 characters; a byte count is never below the
// character count, and the margin leaves room for GitHub's own accounting.
const MaxTrackingBytes = 60000

// DefaultWebURL is GitHub's web address, for commit and branch links.
const DefaultWebURL = "https://github.com"

// ---------------------------------------------------------------------
// Digest: the few facts of a run's agent events the comment shows.

// Todo is one checklist item of the agent's latest TodoWrite call.
type Todo struct {
	Content string `json:"content"`
	// Status is "pending", "in_progress" or "completed" (others pass through).
	Status     string `json:"status"`
	ActiveForm string `json:"activeForm,omitempty"`
}

// ResultDigest sums the run's result events (one per agent turn: the
// first launch and one per answered question).
type ResultDigest struct {
	// Subtype, IsError and Text are the last result's.
	Subtype string
	IsError bool
	Text    string
	// The rest are totals over every result.
	CostUSD    float64
	Turns      int
	DurationMS int64
	// InputTokens counts fresh, cache-write and cache-read input tokens,
	// as the core's app.Usage does.
	InputTokens  int64
	OutputTokens int64
	Results      int
}

// RunDigest is a small summary of one run's agent events.
type RunDigest struct {
	// Todos is the checklist of the latest TodoWrite call.
	Todos []Todo
	// ToolUses counts tool calls; Tools counts them by tool name.
	ToolUses int
	Tools    map[string]int
	// LastText is the agent's latest text to the user.
	LastText string
	// Files lists files the agent edited or wrote, in order of first touch.
	Files []string
	// Result is nil until the agent reported a result.
	Result *ResultDigest
	// Records counts the agent records read.
	Records int
	// Notice is the latest run.notice (a retried failure, a restart)
	// since the run's last state change.
	Notice string
}

// maxDigestFiles bounds RunDigest.Files; the comment shows fewer anyway.
const maxDigestFiles = 500

// fileTools are the tools whose input names a file they change, and the
// input field that names it.
var fileTools = map[string]string{
	"Edit": "file_path", "MultiEdit": "file_path", "Write": "file_path", "NotebookEdit": "notebook_path",
}

// Digest folds a run's events into a RunDigest. Only app.EventAgent events
// count; their Data is one Claude Code stream-json line. Decoding is
// lenient: a field of an unexpected type reads as empty, a line that is
// not an object is skipped, and nothing panics.
func Digest(events []app.Event) RunDigest {
	var d RunDigest
	seenTool := map[string]bool{}
	seenFile := map[string]bool{}
	for _, e := range events {
		switch e.Type {
		case app.EventRunNotice:
			var n app.NoticeData
			if json.Unmarshal(e.Data, &n) == nil {
				d.Notice = n.Text
			}
			continue
		case app.EventRunState:
			d.Notice = "" // the run moved on: the notice is stale
			continue
		}
		if e.Type != app.EventAgent {
			continue
		}
		o := jsonObject(e.Data)
		if o == nil {
			continue
		}
		d.Records++
		switch o.str("type") {
		case "assistant":
			// Sub-agent messages (Task tool) are not the agent talking to
			// the user, and their checklists are not the run's.
			sub := o.str("parent_tool_use_id") != ""
			msg := jsonObject(o["message"])
			if s, ok := jsonString(msg["content"]); ok {
				if !sub && strings.TrimSpace(s) != "" {
					d.LastText = s
				}
				continue
			}
			for _, raw := range jsonArray(msg["content"]) {
				b := jsonObject(raw)
				switch b.str("type") {
				case "text":
					if t := b.str("text"); !sub && strings.TrimSpace(t) != "" {
						d.LastText = t
					}
				case "tool_use", "server_tool_use":
					// Newer Claude Code releases may repeat a message's
					// blocks across lines; count each call once.
					if id := b.str("id"); id != "" {
						if seenTool[id] {
							continue
						}
						seenTool[id] = true
					}
					name := b.str("name")
					d.ToolUses++
					if d.Tools == nil {
						d.Tools = map[string]int{}
					}
					if len(d.Tools) < 100 || d.Tools[name] > 0 {
						d.Tools[name]++
					}
					input := jsonObject(b["input"])
					if name == "TodoWrite" && !sub {
						d.Todos = d.Todos[:0:0]
						for _, t := range jsonArray(input["todos"]) {
							to := jsonObject(t)
							d.Todos = append(d.Todos, Todo{Content: to.str("content"), Status: to.str("status"), ActiveForm: to.str("activeForm")})
						}
					}
					if field, ok := fileTools[name]; ok {
						if p := input.str(field); p != "" && !seenFile[p] && len(d.Files) < maxDigestFiles {
							seenFile[p] = true
							d.Files = append(d.Files, p)
						}
					}
				}
			}
		case "result":
			r := d.Result
			if r == nil {
				r = &ResultDigest{}
				d.Result = r
			}
			r.Results++
			r.Subtype = o.str("subtype")
			r.IsError = o.boolean("is_error")
			r.Text = o.str("result")
			r.CostUSD += o.float("total_cost_usd")
			r.Turns += int(o.float("num_turns"))
			r.DurationMS += int64(o.float("duration_ms"))
			u := jsonObject(o["usage"])
			r.InputTokens += int64(u.float("input_tokens") + u.float("cache_creation_input_tokens") + u.float("cache_read_input_tokens"))
			r.OutputTokens += int64(u.float("output_tokens"))
		}
	}
	return d
}

// jsonObj is a leniently decoded JSON object.
type jsonObj map[string]json.RawMessage

func jsonObject(raw json.RawMessage) jsonObj {
	var o jsonObj
	if json.Unmarshal(raw, &o) != nil {
		return nil
	}
	return o
}

func jsonArray(raw json.RawMessage) []json.RawMessage {
	var a []json.RawMessage
	if json.Unmarshal(raw, &a) != nil {
		return nil
	}
	return a
}

func jsonString(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func (o jsonObj) str(k string) string {
	s, _ := jsonString(o[k])
	return s
}

func (o jsonObj) boolean(k string) bool {
	var b bool
	_ = json.Unmarshal(o[k], &b)
	return b
}

// float reads a number; out-of-range or non-numbers read as 0, and the
// result is clamped so conversions to integers stay defined.
func (o jsonObj) float(k string) float64 {
	var f float64
	if json.Unmarshal(o[k], &f) != nil || f != f || f < 0 {
		return 0
	}
	return min(f, 1e15)
}

// ---------------------------------------------------------------------
// Marker: how asb recognises its own comment.

// TrackingMarker is what the hidden first line of a tracking comment
// records.
type TrackingMarker struct {
	RunID     app.RunID
	SessionID app.SessionID
	// State is the run state the comment showed when rendered.
	State app.RunState
}

const markerPrefix = "<!-- asb:tracking "

var markerRE = regexp.MustCompile(`^<!-- asb:tracking run=([a-z0-9_]{1,64}) session=([a-z0-9_]{1,64}) state=([a-z]{1,16}) -->$`)

// ParseTrackingMarker reads the marker asb puts on the first line of every
// tracking comment. Only the first line counts, so text quoted or pasted
// further down a comment can never pass for asb's marker.
func ParseTrackingMarker(body string) (TrackingMarker, bool) {
	if !strings.HasPrefix(body, markerPrefix) {
		return TrackingMarker{}, false
	}
	first, _, _ := strings.Cut(body, "\n")
	m := markerRE.FindStringSubmatch(strings.TrimRight(first, "\r"))
	if m == nil {
		return TrackingMarker{}, false
	}
	return TrackingMarker{RunID: app.RunID(m[1]), SessionID: app.SessionID(m[2]), State: app.RunState(m[3])}, true
}

func marker(run app.RunID, sess app.SessionID, state app.RunState) string {
	id := func(s string) string {
		if s == "" || len(s) > 64 || strings.IndexFunc(s, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') }) >= 0 {
			return "none"
		}
		return s
	}
	st := string(state)
	if !state.Valid() {
		st = "unknown"
	}
	return markerPrefix + "run=" + id(string(run)) + " session=" + id(string(sess)) + " state=" + st + " -->"
}

// ShouldEdit decides whether to edit a tracking comment from prev to next,
// so GitHub is not spammed: never for identical text; always for the
// first render or a change of run state (queued → running, a question, the
// end), which people wait for; otherwise at most once per minInterval.
func ShouldEdit(prev, next string, lastEdit, now time.Time, minInterval time.Duration) bool {
	if next == prev {
		return false
	}
	if prev == "" || lastEdit.IsZero() {
		return true
	}
	pm, pok := ParseTrackingMarker(prev)
	nm, nok := ParseTrackingMarker(next)
	if !pok || !nok || pm != nm {
		return true
	}
	return now.Sub(lastEdit) >= minInterval
}

// ---------------------------------------------------------------------
// Rendering.

// TrackingData feeds RenderTracking.
type TrackingData struct {
	// View is the session as app.Service reports it.
	View app.SessionView
	// RunID is the run this comment tracks (one comment per run); empty
	// means View.Current.
	RunID app.RunID
	// Digest is Digest of that run's events.
	Digest RunDigest
	// PublicURL is ASB_PUBLIC_URL; the live view is <PublicURL>/s/<session>.
	// Empty omits the links.
	PublicURL string
	// WebURL is GitHub's web address for commit and branch links;
	// DefaultWebURL when empty.
	WebURL string
	// Trigger is the command prefix people answer with; DefaultTrigger
	// when empty.
	Trigger string
	// Now, when set, shows how long a live run has been going.
	Now time.Time
}

// budget caps each piece of free text, in bytes before escaping. Render
// divides them until the comment fits.
type budget struct {
	task, taskFull, question, summary, latest, item, err int
	todos, files, commits, tools                         int
}

var fullBudget = budget{
	task: 300, taskFull: 4000, question: 8000, summary: 16000, latest: 400, item: 240, err: 6000,
	todos: 50, files: 60, commits: 10, tools: 6,
}

func (b budget) div(n int) budget {
	f := func(v, floor int) int { return max(v/n, floor) }
	return budget{
		task: f(b.task, 60), taskFull: f(b.taskFull, 200), question: f(b.question, 500), summary: f(b.summary, 500),
		latest: f(b.latest, 80), item: f(b.item, 60), err: f(b.err, 300),
		todos: f(b.todos, 5), files: f(b.files, 5), commits: f(b.commits, 5), tools: f(b.tools, 3),
	}
}

// RenderTracking renders one run's tracking comment: a hidden marker, the
// state, the queue position, the checklist, the pending question and how
// to answer it, links to the live view, and at the end the report or the
// error. All text from people and the agent is escaped or fenced, so it
// can neither mention anyone, inject HTML, nor break the comment's
// structure; long text is truncated with a note, and the whole comment
// stays under MaxTrackingBytes.
func RenderTracking(d TrackingData) string {
	for _, n := range []int{1, 2, 4, 8, 16, 32} {
		if out := renderWith(d, fullBudget.div(n), false); len(out) <= MaxTrackingBytes {
			return out
		}
	}
	// Unreachable with the floors above, but the limit is a hard one.
	out := renderWith(d, fullBudget.div(1000), true)
	return truncateUTF8(out, MaxTrackingBytes)
}

func renderWith(d TrackingData, b budget, minimal bool) string {
	v := buildTrackView(d, b, minimal)
	var sb strings.Builder
	if err := trackingTmpl.Execute(&sb, v); err != nil {
		// The template is fixed and its data plain strings; an error is a
		// bug, and a short comment beats none.
		return v.Marker + "\n### asb\n\n(could not render this comment: " + escapeInline(err.Error(), 200) + ")\n"
	}
	return collapseBlankLines(sb.String())
}

// trackView holds only text that is already safe to paste into Markdown.
type trackView struct {
	Marker, Emoji, Headline string
	Task, Requester         string
	TaskFull                string
	Queue                   string
	Question, Answer        string
	Todos                   []string
	TodosMore               int
	Activity, Latest        string
	Summary                 string
	Changes                 []string
	Files                   []string
	FilesMore               int
	Error, ErrorTitle       string
	Notice                  string
	Usage                   string
	Footer                  string
}

var stateEmoji = map[app.RunState]string{
	app.StateQueued: "⏳", app.StateStarting: "🚀", app.StateRunning: "⚙️", app.StateWaiting: "❓",
	app.StateDone: "✅", app.StateFailed: "❌", app.StateCancelled: "🚫",
}

func buildTrackView(d TrackingData, b budget, minimal bool) trackView {
	run, pos := pickRun(d)
	sess := d.View.Session
	trigger := strings.TrimSpace(d.Trigger)
	if trigger == "" {
		trigger = DefaultTrigger
	}
	web := strings.TrimRight(d.WebURL, "/")
	if !safeURL(web) {
		web = DefaultWebURL
	}
	repo := run.Origin.Repo
	if repo == "" {
		repo = sess.Origin.Repo
	}
	if _, _, err := app.ParseRepo(repo); err != nil {
		repo = ""
	}
	live := ""
	if base := strings.TrimRight(d.PublicURL, "/"); base != "" && safeURL(base) && safeID(string(sess.ID)) {
		live = base + "/s/" + string(sess.ID)
	}
	thread := "issue"
	if run.Origin.PullRequest || (run.Origin.Repo == "" && sess.Origin.PullRequest) {
		thread = "pull request"
	}

	v := trackView{Marker: marker(run.ID, sess.ID, run.State), Emoji: stateEmoji[run.State]}
	if v.Emoji == "" {
		v.Emoji = "🤖"
	}
	elapsed := runDuration(run, d.Digest, d.Now)
	switch run.State {
	case app.StateQueued:
		v.Headline = "Queued"
		if pos > 0 {
			v.Queue = fmt.Sprintf("Position **%d** in this %s's queue: it starts when the %s ahead of it finish.", pos, thread, plural(pos, "request", "requests"))
		} else {
			v.Queue = "Next up: it starts as soon as a sandbox is free."
		}
	case app.StateStarting:
		v.Headline = "Starting a sandbox"
	case app.StateRunning:
		v.Headline = "Working"
		if elapsed > 0 {
			v.Headline += " · " + fmtDuration(elapsed)
		}
	case app.StateWaiting:
		v.Headline = "Waiting for your answer"
	case app.StateDone:
		v.Headline = "Done"
		if elapsed > 0 {
			v.Headline += " in " + fmtDuration(elapsed)
		}
	case app.StateFailed:
		v.Headline = "Failed"
		if elapsed > 0 {
			v.Headline += " after " + fmtDuration(elapsed)
		}
	case app.StateCancelled:
		v.Headline = "Cancelled"
	default:
		v.Headline = "asb"
	}

	if !run.State.Terminal() && strings.TrimSpace(d.Digest.Notice) != "" {
		v.Notice = escapeInline(Sanitize(d.Digest.Notice), 300)
	}

	// The task: its first line inline, the whole of it folded away when
	// there is more.
	prompt := strings.TrimSpace(Sanitize(run.Prompt))
	first, restOfPrompt, _ := strings.Cut(prompt, "\n")
	v.Task = escapeInline(first, b.task)
	if (strings.TrimSpace(restOfPrompt) != "" || len(first) > b.task) && !minimal {
		v.TaskFull = safeMarkdown(prompt, b.taskFull, live)
	}
	if login := run.Origin.Login; validLogin(login) {
		v.Requester = "@\u200b" + login
	}

	if run.State == app.StateWaiting {
		q := run.Question
		if q == "" {
			q = d.View.Question
		}
		if strings.TrimSpace(q) == "" {
			q = "(the agent did not say; see the live view)"
		}
		v.Question = safeMarkdown(q, b.question, live)
		v.Answer = fmt.Sprintf("**To answer**, post a new comment on this %s whose first line starts with %s, for example %s. The answer may continue on the next lines.",
			thread, codeSpan(trigger), codeSpan(trigger+" <your answer>"))
		if live != "" {
			v.Answer += " You can also answer in the [live view](" + live + ")."
		}
	}

	if !minimal {
		todos := d.Digest.Todos
		for i, t := range todos {
			if i == b.todos {
				v.TodosMore = len(todos) - i
				break
			}
			v.Todos = append(v.Todos, todoLine(t, b.item))
		}
	}
	if d.Digest.ToolUses > 0 {
		v.Activity = activity(d.Digest, b.tools)
	}
	if (run.State == app.StateRunning || run.State == app.StateStarting) && strings.TrimSpace(d.Digest.LastText) != "" {
		v.Latest = escapeInline(d.Digest.LastText, b.latest)
	}

	switch run.State {
	case app.StateDone:
		summary := run.Summary
		if strings.TrimSpace(summary) == "" && d.Digest.Result != nil {
			summary = d.Digest.Result.Text
		}
		if strings.TrimSpace(summary) == "" {
			summary = d.Digest.LastText
		}
		if strings.TrimSpace(summary) == "" {
			summary = "(the agent gave no summary)"
		}
		v.Summary = safeMarkdown(summary, b.summary, live)
		v.Changes = changes(run, repo, web, b)
		if !minimal {
			for i, f := range d.Digest.Files {
				if i == b.files {
					v.FilesMore = len(d.Digest.Files) - i
					break
				}
				v.Files = append(v.Files, codeSpan(clip(displayPath(f), b.item)))
			}
		}
	case app.StateFailed, app.StateCancelled:
		v.ErrorTitle = "Error"
		if run.State == app.StateCancelled {
			v.ErrorTitle = "Reason"
		}
		if e := strings.TrimSpace(run.Error); e != "" {
			v.Error = fenced(e, b.err, live)
		}
		if run.State == app.StateFailed && v.Error == "" {
			v.Error = fenced("(no error message was recorded; see the live view)", b.err, live)
		}
	}
	if run.State.Terminal() {
		v.Usage = usageLine(run, d.Digest, elapsed)
	}

	var foot []string
	if live != "" {
		foot = append(foot, "[Live view]("+live+")")
	}
	if safeID(string(run.ID)) {
		foot = append(foot, "run "+codeSpan(string(run.ID)))
	}
	if d.View.Queued > 0 && run.State.Active() {
		foot = append(foot, fmt.Sprintf("%d more queued on this %s", d.View.Queued, thread))
	}
	foot = append(foot, "asb · "+codeSpan(trigger+" help")+" for commands")
	v.Footer = strings.Join(foot, " · ")
	return v
}

// pickRun finds the run this comment is about, with its queue position.
func pickRun(d TrackingData) (app.Run, int) {
	for _, r := range d.View.Runs {
		if d.RunID != "" && r.ID == d.RunID {
			return r.Run, r.Position
		}
	}
	if d.RunID == "" && d.View.Current != nil {
		for _, r := range d.View.Runs {
			if r.ID == d.View.Current.ID {
				return r.Run, r.Position
			}
		}
		return *d.View.Current, 0
	}
	return app.Run{ID: d.RunID}, 0
}

func todoLine(t Todo, limit int) string {
	switch t.Status {
	case "completed":
		return "- [x] " + escapeInline(t.Content, limit)
	case "in_progress":
		label := t.ActiveForm
		if strings.TrimSpace(label) == "" {
			label = t.Content
		}
		return "- [ ] 🔄 **" + escapeInline(label, limit) + "**"
	default:
		return "- [ ] " + escapeInline(t.Content, limit)
	}
}

func activity(d RunDigest, top int) string {
	type kv struct {
		name string
		n    int
	}
	var list []kv
	for k, n := range d.Tools {
		list = append(list, kv{k, n})
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].n != list[j].n {
			return list[i].n > list[j].n
		}
		return list[i].name < list[j].name
	})
	var parts []string
	for i, e := range list {
		if i == top {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, escapeInline(e.name, 40)+" "+strconv.Itoa(e.n))
	}
	s := fmt.Sprintf("🛠️ %d tool %s", d.ToolUses, plural(d.ToolUses, "call", "calls"))
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	if len(d.Files) > 0 {
		s += fmt.Sprintf(" · %d %s edited", len(d.Files), plural(len(d.Files), "file", "files"))
	}
	return s
}

var shaRE = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

// changes lists what publishing produced: commits, branch, pull request.
func changes(run app.Run, repo, web string, b budget) []string {
	res := run.Result
	var out []string
	if len(res.Commits) > 0 {
		var links []string
		for i, c := range res.Commits {
			if i == b.commits {
				links = append(links, fmt.Sprintf("and %d more", len(res.Commits)-i))
				break
			}
			c = strings.ToLower(strings.TrimSpace(c))
			if !shaRE.MatchString(c) {
				links = append(links, codeSpan(clip(c, 64)))
				continue
			}
			short := codeSpan(c[:min(7, len(c))])
			if repo != "" {
				links = append(links, "["+short+"]("+web+"/"+repo+"/commit/"+c+")")
			} else {
				links = append(links, short)
			}
		}
		out = append(out, fmt.Sprintf("**%s:** %s", plural(len(res.Commits), "Commit", "Commits"), strings.Join(links, ", ")))
	}
	if br := strings.TrimSpace(res.Branch); br != "" {
		s := "**Branch:** " + codeSpan(clip(br, 200))
		if repo != "" && app.CheckRef(br) == nil {
			s = "**Branch:** [" + codeSpan(br) + "](" + web + "/" + repo + "/tree/" + escapePathSegments(br) + ")"
		}
		out = append(out, s)
	}
	if who := pushedAs(res.PushedAs, web); who != "" {
		out = append(out, "**Pushed as:** "+who)
	}
	if pr := strings.TrimSpace(res.PullRequestURL); pr != "" {
		if safeURL(pr) {
			out = append(out, "**Pull request:** "+pr)
		} else {
			out = append(out, "**Pull request:** "+escapeInline(pr, 200))
		}
	}
	if res.FilesChanged > 0 {
		out = append(out, fmt.Sprintf("**Files changed:** %d", res.FilesChanged))
	}
	if len(out) == 0 {
		out = append(out, "No commits were pushed.")
	}
	return out
}

func usageLine(run app.Run, d RunDigest, elapsed time.Duration) string {
	u := run.Usage
	if u == (app.Usage{}) && d.Result != nil {
		u = app.Usage{InputTokens: d.Result.InputTokens, OutputTokens: d.Result.OutputTokens, CostUSD: d.Result.CostUSD, Turns: d.Result.Turns}
	}
	var parts []string
	if elapsed > 0 {
		parts = append(parts, "⏱️ "+fmtDuration(elapsed))
	}
	if u.InputTokens > 0 || u.OutputTokens > 0 {
		parts = append(parts, fmt.Sprintf("🔢 %s input / %s output tokens", thousands(u.InputTokens), thousands(u.OutputTokens)))
	}
	if u.CostUSD > 0 {
		parts = append(parts, "💲 "+fmtCost(u.CostUSD))
	}
	if u.Turns > 0 {
		parts = append(parts, fmt.Sprintf("🔁 %d %s", u.Turns, plural(u.Turns, "turn", "turns")))
	}
	return strings.Join(parts, " · ")
}

// runDuration is how long the run has taken: start to finish, start to now
// for a live run, else what the agent reported.
func runDuration(run app.Run, d RunDigest, now time.Time) time.Duration {
	if !run.StartedAt.IsZero() {
		end := run.FinishedAt
		if end.IsZero() && !run.State.Terminal() {
			end = now
		}
		if !end.IsZero() && end.After(run.StartedAt) {
			return end.Sub(run.StartedAt)
		}
	}
	if run.State.Terminal() && d.Result != nil && d.Result.DurationMS > 0 {
		return time.Duration(d.Result.DurationMS) * time.Millisecond
	}
	return 0
}

func fmtDuration(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, s := int(d/time.Hour), int(d%time.Hour/time.Minute), int(d%time.Minute/time.Second)
	switch {
	case h > 0:
		return fmt.Sprintf("%dh %dm", h, m)
	case m > 0:
		return fmt.Sprintf("%dm %ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}

func fmtCost(c float64) string {
	if c >= 1 {
		return fmt.Sprintf("$%.2f", c)
	}
	return fmt.Sprintf("$%.4f", c)
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// displayPath shows a file relative to the workspace.
func displayPath(p string) string {
	p = strings.TrimPrefix(p, "/workspace/")
	return p
}

func escapePathSegments(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

// safeURL accepts an absolute http(s) URL that can sit inside a Markdown
// link destination as-is: no white space, parentheses, angle brackets,
// quotes or backslashes.
func safeURL(s string) bool {
	if s == "" || len(s) > 2000 || strings.ContainsAny(s, " \t\r\n()<>\"'`\\[]") {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

func safeID(s string) bool {
	return s != "" && len(s) <= 64 && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_')
	}) < 0
}

// validLogin accepts GitHub logins (letters, digits, single hyphens,
// at most 39) and app bot logins ("name[bot]").
func validLogin(s string) bool {
	s = strings.TrimSuffix(s, "[bot]")
	if s == "" || len(s) > 39 || s[0] == '-' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------------
// Escaping. Three shapes, for three places in the comment:
//
//   escapeInline  one line of text inside our own Markdown (task, todo, tool name)
//   safeMarkdown  agent or person Markdown kept readable (summary, question, full task)
//   fenced        verbatim text in a code block (errors)
//
// Each removes hidden characters first (Sanitize) and defuses mentions
// ("@user" → "@\u200buser") and issue references ("#12" → "#\u200b12",
// which would otherwise cross-link other repositories).

const zwsp = "\u200b"

// escapeInline collapses s to one line, truncates it to limit bytes and
// backslash-escapes every character Markdown or HTML could act on.
func escapeInline(s string, limit int) string {
	s = strings.Join(strings.Fields(Sanitize(s)), " ")
	cut := len(s) > limit
	if cut {
		s = strings.TrimRightFunc(truncateUTF8(s, limit), unicode.IsSpace)
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i, r := range s {
		switch {
		case strings.ContainsRune("\\`*_[]<>|~&#!$", r):
			b.WriteByte('\\')
			b.WriteRune(r)
			if r == '#' && nextIsAlnum(s, i+1) {
				b.WriteString(zwsp)
			}
		case r == '@' && nextIsAlnum(s, i+1):
			b.WriteString("@" + zwsp)
		case i == 0 && strings.ContainsRune("+-=", r):
			// A leading list marker or setext underline would turn a
			// checklist item into a nested list or a heading.
			b.WriteByte('\\')
			b.WriteRune(r)
		case (r == '.' || r == ')') && isDigits(s[:i]):
			// "1." or "1)" at the start opens an ordered list.
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	if cut {
		b.WriteString("…")
	}
	return b.String()
}

func isDigits(s string) bool {
	if s == "" || len(s) > 9 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func nextIsAlnum(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// defuse breaks mentions and issue references in text that GitHub will
// render (outside code).
func defuse(s string) string {
	if !strings.ContainsAny(s, "@#") {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		b.WriteRune(r)
		if (r == '@' || r == '#') && nextIsAlnum(s, i+1) {
			b.WriteString(zwsp)
		}
	}
	return b.String()
}

// truncNote says text was cut and where the rest is.
func truncNote(dropped int, live string) string {
	where := "see the run's log"
	if live != "" {
		where = "see the [live view](" + live + ")"
	}
	return fmt.Sprintf("_… %s more truncated; %s._", byteSize(dropped), where)
}

func byteSize(n int) string {
	if n >= 1<<10 {
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// safeMarkdown keeps Markdown's shape (paragraphs, lists, emphasis, code)
// but makes it inert. Nothing is passed through as written: outside code,
// backslashes are doubled (so none can escape a delimiter asb emits),
// '&' and '<' become entities (no HTML, no entity-encoded hidden
// characters), stray backticks are escaped, and mentions and references
// are defused; code spans are re-emitted with delimiters longer than any
// backtick run inside them; fenced blocks are re-emitted at the top level
// with a fence longer than any backtick run inside and are always closed,
// so text cannot leave a block (or a block swallow the rest of the
// comment) however GitHub nests the original. Text over limit bytes is cut
// with a note.
func safeMarkdown(s string, limit int, live string) string {
	s = strings.TrimSpace(Sanitize(s))
	dropped := 0
	if len(s) > limit {
		cut := truncateUTF8(s, limit)
		if nl := strings.LastIndexByte(cut, '\n'); nl > len(cut)/2 {
			cut = cut[:nl]
		}
		dropped = len(s) - len(cut)
		s = strings.TrimRightFunc(cut, unicode.IsSpace)
	}
	lines := strings.Split(s, "\n")
	out := make([]string, 0, len(lines)+4)
	for i := 0; i < len(lines); i++ {
		fence, info, indent := openFence(lines[i])
		if fence == "" {
			out = append(out, escapeMarkdownLine(lines[i]))
			continue
		}
		var body []string
		j := i + 1
		for ; j < len(lines) && !closesFence(lines[j], fence); j++ {
			body = append(body, dedent(lines[j], indent))
		}
		i = j // the closing line, or past the end for a fence left open
		out = append(out, codeBlock(body, info)...)
	}
	res := strings.Join(out, "\n")
	if dropped > 0 {
		res += "\n\n" + truncNote(dropped, live)
	}
	return res
}

// openFence recognises a line that opens a fenced code block (CommonMark:
// up to three spaces, three or more backticks or tildes; a backtick
// fence's info string has no backticks) and returns the fence, a
// harmless language word from the info string, and the indentation.
func openFence(line string) (fence, info string, indent int) {
	t := strings.TrimLeft(line, " ")
	indent = len(line) - len(t)
	if indent > 3 || len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return "", "", 0
	}
	n := 0
	for n < len(t) && t[n] == t[0] {
		n++
	}
	if n < 3 || (t[0] == '`' && strings.ContainsRune(t[n:], '`')) {
		return "", "", 0
	}
	word, _ := cutWord(t[n:])
	if len(word) <= 20 && strings.IndexFunc(word, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("+-_.#", r))
	}) < 0 {
		info = word
	}
	return t[:n], info, indent
}

// opensFence reports the fence a line opens, or "".
func opensFence(line string) string {
	f, _, _ := openFence(line)
	return f
}

func closesFence(line, fence string) bool {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return false
	}
	n := 0
	for n < len(t) && t[n] == fence[0] {
		n++
	}
	return n >= len(fence) && strings.TrimSpace(t[n:]) == ""
}

// dedent removes up to n leading spaces, as CommonMark does for the
// content of a fence indented by n.
func dedent(line string, n int) string {
	for n > 0 && strings.HasPrefix(line, " ") {
		line, n = line[1:], n-1
	}
	return line
}

// codeBlock emits a top-level fenced block that its content cannot close.
func codeBlock(body []string, info string) []string {
	longest := 0
	for _, l := range body {
		longest = max(longest, longestRun(l, '`'))
	}
	f := strings.Repeat("`", max(3, longest+1))
	out := make([]string, 0, len(body)+4)
	out = append(out, "", f+info)
	out = append(out, body...)
	return append(out, f, "")
}

// escapeMarkdownLine escapes one line outside fenced code, re-emitting
// its code spans.
func escapeMarkdownLine(line string) string {
	var b strings.Builder
	if t := strings.TrimLeft(line, " \t"); strings.HasPrefix(t, "~~~") {
		// Indented deeper than a top-level fence, "~~~" could still open
		// one inside a list item; make it text.
		b.WriteString(line[:len(line)-len(t)] + "\\")
		line = t
	}
	for len(line) > 0 {
		i := strings.IndexByte(line, '`')
		if i < 0 {
			b.WriteString(escapeText(line))
			break
		}
		b.WriteString(escapeText(line[:i]))
		line = line[i:]
		n := 0
		for n < len(line) && line[n] == '`' {
			n++
		}
		// A code span closes at the next run of exactly n backticks.
		end := -1
		for j := n; j < len(line); {
			k := strings.IndexByte(line[j:], '`')
			if k < 0 {
				break
			}
			k += j
			m := 0
			for k+m < len(line) && line[k+m] == '`' {
				m++
			}
			if m == n {
				end = k
				break
			}
			j = k + m
		}
		if end < 0 {
			// Unmatched backticks are literal text.
			b.WriteString(strings.Repeat("\\`", n))
			line = line[n:]
			continue
		}
		b.WriteString(codeSpan(line[n:end]))
		line = line[end+n:]
	}
	return b.String()
}

// escapeText makes text outside code inert: backslashes stay literal (so
// they cannot escape a delimiter asb writes next), no HTML, no entities,
// no links, no mentions, no cross-references.
func escapeText(s string) string {
	s = strings.ReplaceAll(s, "\\", "\\\\")
	s = strings.ReplaceAll(s, "&", "&amp;")
	s = strings.ReplaceAll(s, "<", "&lt;")
	// No links, images or checkboxes of the agent's making: a prompt-
	// injected agent could dress a phishing link as a button, and
	// GitHub still autolinks a bare URL.
	s = strings.ReplaceAll(s, "[", "\\[")
	return defuse(s)
}

// fenced puts s verbatim in a code block whose fence is longer than any
// backtick run in s, so s cannot close it.
func fenced(s string, limit int, live string) string {
	s = strings.Trim(Sanitize(s), "\n")
	dropped := 0
	if len(s) > limit {
		cut := truncateUTF8(s, limit)
		dropped = len(s) - len(cut)
		s = cut
	}
	f := strings.Repeat("`", max(3, longestRun(s, '`')+1))
	out := f + "text\n" + s + "\n" + f
	if dropped > 0 {
		out += "\n\n" + truncNote(dropped, live)
	}
	return out
}

// codeSpan renders s as inline code that s cannot break out of.
func codeSpan(s string) string {
	s = strings.Join(strings.Fields(Sanitize(s)), " ")
	if s == "" {
		return "` `"
	}
	f := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return f + " " + s + " " + f
	}
	return f + s + f
}

func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

// collapseBlankLines removes the runs of blank lines that template
// sections leave when they are empty, outside code blocks.
func collapseBlankLines(s string) string {
	lines := strings.Split(s, "\n")
	out := make([]string, 0, len(lines))
	blank := false
	fence := ""
	for _, l := range lines {
		if fence != "" {
			if closesFence(l, fence) {
				fence = ""
			}
			out = append(out, l)
			blank = false
			continue
		}
		if f := opensFence(l); f != "" {
			fence = f
		}
		if strings.TrimSpace(l) == "" {
			if blank || len(out) == 0 {
				continue
			}
			blank = true
			out = append(out, "")
			continue
		}
		blank = false
		out = append(out, l)
	}
	return strings.TrimRight(strings.Join(out, "\n"), "\n") + "\n"
}

// trackingTmpl lays the comment out. Every field is already safe
// Markdown (see buildTrackView); the template only arranges it.
var trackingTmpl = template.Must(template.New("tracking").Parse(`{{.Marker}}
### {{.Emoji}} {{.Headline}}

{{if .Task}}**Task:** {{.Task}}{{if .Requester}} — requested by {{.Requester}}{{end}}{{end}}

{{if .TaskFull}}<details><summary>Full request</summary>

{{.TaskFull}}

</details>{{end}}

{{.Queue}}

{{if .Notice}}> ⚠️ {{.Notice}}{{end}}

{{if .Question}}#### ❓ The agent has a question

{{.Question}}

{{.Answer}}{{end}}

{{if .Todos}}#### Progress

{{range .Todos}}{{.}}
{{end}}{{if .TodosMore}}- … and {{.TodosMore}} more
{{end}}{{end}}

{{if .Activity}}{{.Activity}}{{end}}

{{if .Latest}}> 💬 {{.Latest}}{{end}}

{{if .Summary}}#### Summary

{{.Summary}}

#### Changes

{{range .Changes}}- {{.}}
{{end}}{{if .Files}}
<details><summary>Files edited by the agent</summary>

{{range .Files}}- {{.}}
{{end}}{{if .FilesMore}}- … and {{.FilesMore}} more
{{end}}
</details>{{end}}{{end}}

{{if .Error}}#### {{.ErrorTitle}}

{{.Error}}{{end}}

{{if .Usage}}{{.Usage}}{{end}}

---
<sub>{{.Footer}}</sub>
`))

// pushedAs names whose credentials pushed: the App, or the people whose
// stored tokens did (linked, not @-mentioned: an edit must not ping).
func pushedAs(list, web string) string {
	var names []string
	for _, who := range strings.Split(list, ",") {
		switch who = strings.TrimSpace(who); {
		case who == "":
		case who == "app":
			names = append(names, "the GitHub App")
		case app.ValidLogin(who):
			names = append(names, "["+who+"]("+web+"/"+who+")")
		default:
			names = append(names, codeSpan(clip(who, 40)))
		}
	}
	return strings.Join(names, ", ")
}
