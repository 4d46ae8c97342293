// Package github is asb's GitHub surface (docs/architecture.md): it turns
// GitHub input into calls on app.Service and renders the results, holding
// no business logic of its own, and imports only app from this module.
//
// The pure building blocks live in three files: command.go parses `/agent`
// comments, webhook.go receives, verifies, stores and classifies webhook
// deliveries, and track.go renders the one tracking comment per run.
package github

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultTrigger starts a command when no trigger is configured
// (AGENT_TRIGGER).
const DefaultTrigger = "/agent"

// MaxCommentBytes bounds the comment bodies the parser looks at. GitHub
// caps a comment at 65536 characters; anything bigger did not come from a
// person typing a command, and refusing it early keeps the parser's cost
// bounded.
const MaxCommentBytes = 64 << 10

// CommandKind says what a comment asks for. The zero value is CommandNone.
type CommandKind int

const (
	// CommandNone: the comment is not addressed to asb (or is unusable,
	// see Command.Reason). Nothing happens and nothing is replied.
	CommandNone CommandKind = iota
	// CommandAsk: work on Text. On a thread whose run waits for an
	// answer, Text is the answer.
	CommandAsk
	// CommandHelp: reply with Command.Reply.
	CommandHelp
	// CommandStatus: reply with the thread's session state.
	CommandStatus
	// CommandCancel: cancel the thread's active run; Text, if any, is the
	// reason the person gave.
	CommandCancel
	// CommandNew: close the thread's session and start a fresh one on Text.
	CommandNew
	// CommandUnknown: a malformed command (a typo of a subcommand, `new`
	// without a task). Reply with Command.Reply and run nothing. Text is
	// what an ask would have carried, so a consumer that knows a question
	// is pending may take a one-word reply as the answer instead.
	CommandUnknown
)

var commandKindNames = [...]string{"none", "ask", "help", "status", "cancel", "new", "unknown"}

func (k CommandKind) String() string {
	if k >= 0 && int(k) < len(commandKindNames) {
		return commandKindNames[k]
	}
	return fmt.Sprintf("CommandKind(%d)", int(k))
}

// Command is the typed result of parsing one comment, in the manner of
// atlantis' CommentParseResult: parsing never fails, it classifies.
type Command struct {
	Kind CommandKind
	// Text is the ask (Ask, New), the answer, or the reason (Cancel),
	// with hidden characters and HTML comments removed. It may span many
	// lines and contain quotes and code blocks after the trigger line.
	Text string
	// Reply is a ready-to-post Markdown reply (Help, Unknown).
	Reply string
	// Reason says why a comment is None when that is worth logging
	// (oversized body); empty for ordinary comments.
	Reason string
}

// subcommands are the words that mean something on their own after the
// trigger. "new" is special: it takes the rest as its ask.
var subcommands = map[string]CommandKind{
	"help":   CommandHelp,
	"-h":     CommandHelp,
	"--help": CommandHelp,
	"?":      CommandHelp,
	"status": CommandStatus,
	"cancel": CommandCancel,
}

// suggestable are the subcommands a lone typo is compared against. "new"
// is left out: alone it is an error anyway, and near-misses such as "now"
// are plausible one-word answers to a question.
var suggestable = []string{"help", "status", "cancel"}

// ParseCommand classifies a comment body. trigger is the configured
// command prefix (DefaultTrigger when empty), matched case-insensitively.
//
// Grammar (after removing HTML comments and invisible characters, which a
// reader of the rendered comment cannot see):
//
//	comment   = *blank-line trigger-line *line         (a trigger repeated at the start of the ask is dropped)
//	trigger-line = 0-3 spaces TRIGGER [ws rest] EOL   (TRIGGER then space or end of line)
//	rest      = "help" | "-h" | "--help" | "?"     → Help
//	          | "status"                           → Status
//	          | "cancel"                           → Cancel (following lines: the reason)
//	          | "new" [ws ask]                     → New   (ask may continue on the next lines)
//	          | ask                                → Ask   (rest of the line plus the next lines)
//	          | ""                                 → Help when nothing follows, else Ask on the next lines
//
// A subcommand word counts only when it is the whole rest of the trigger
// line (case-insensitive, a trailing '.', '!' or '?' ignored): "/agent
// help me fix the login" is an ask. A lone word that is one edit away
// from a subcommand ("halp", "stauts") is Unknown with a "did you mean"
// reply. Because only the first non-blank line can trigger, a trigger in
// a quote ("> /agent …"), a fenced or indented code block, or further
// down the comment never does.
func ParseCommand(body, trigger string) Command {
	trigger = strings.TrimSpace(trigger)
	if trigger == "" {
		trigger = DefaultTrigger
	}
	if len(body) > MaxCommentBytes {
		return Command{Reason: fmt.Sprintf("comment is %d bytes; commands are read from comments up to %d bytes", len(body), MaxCommentBytes)}
	}
	clean := Sanitize(body)

	line, rest := firstLine(clean)
	after, ok := triggerLine(line, trigger)
	if !ok {
		return Command{}
	}
	// "/agent /agent fix", or "/agent" alone on a line followed by
	// "/agent fix", is one trigger typed twice, not an ask that starts
	// with the trigger.
	for {
		if again, ok := cutTrigger(strings.TrimLeftFunc(after, unicode.IsSpace), trigger); ok {
			after = again
			continue
		}
		if strings.TrimSpace(after) != "" {
			break
		}
		next, more := firstLine(rest)
		again, ok := triggerLine(next, trigger)
		if !ok {
			break
		}
		after, rest = again, more
	}
	head := strings.TrimSpace(after)
	tail := trimBlankLines(rest)
	// Keep a paragraph break between the trigger line and the rest.
	sep := "\n"
	if l, _, _ := strings.Cut(rest, "\n"); tail != "" && strings.TrimSpace(l) == "" {
		sep = "\n\n"
	}

	if head == "" {
		if tail == "" {
			return Command{Kind: CommandHelp, Reply: HelpText(trigger)}
		}
		return Command{Kind: CommandAsk, Text: tail}
	}

	word, more := cutWord(head)
	lw := strings.ToLower(word)
	if more == "" {
		k, ok := subcommands[lw]
		if !ok {
			k, ok = subcommands[strings.TrimRight(lw, ".!?")]
		}
		if ok {
			return subcommand(k, tail, trigger)
		}
	}
	if lw == "new" {
		for {
			again, ok := cutTrigger(more, trigger)
			if !ok {
				break
			}
			more = strings.TrimSpace(again)
		}
		text := joinAsk(more, tail, sep)
		if text == "" {
			return Command{Kind: CommandUnknown, Reply: fmt.Sprintf(
				"`%s new` starts a fresh session and needs a task: `%s new <what to do>`.\n\n%s",
				inlineCodeSafe(trigger), inlineCodeSafe(trigger), HelpText(trigger))}
		}
		return Command{Kind: CommandNew, Text: text}
	}
	text := joinAsk(head, tail, sep)
	if more == "" && tail == "" {
		if s := suggest(strings.TrimRight(lw, ".!?")); s != "" {
			return Command{Kind: CommandUnknown, Text: text, Reply: fmt.Sprintf(
				"I did not understand `%s %s`. Did you mean `%s %s`?\n\n%s",
				inlineCodeSafe(trigger), inlineCodeSafe(word), inlineCodeSafe(trigger), s, HelpText(trigger))}
		}
	}
	return Command{Kind: CommandAsk, Text: text}
}

// firstLine returns the first non-blank line of s and what follows it.
func firstLine(s string) (line, rest string) {
	rest = s
	for rest != "" {
		line, rest, _ = strings.Cut(rest, "\n")
		if strings.TrimSpace(line) != "" {
			return line, rest
		}
	}
	return "", ""
}

// triggerLine reports whether line starts with the trigger after at most
// three columns of indentation (four make an indented code block), and
// returns what follows the trigger.
func triggerLine(line, trigger string) (string, bool) {
	if strings.TrimSpace(line) == "" || indentColumns(line) >= 4 {
		return "", false
	}
	return cutTrigger(strings.TrimLeftFunc(line, unicode.IsSpace), trigger)
}

func subcommand(k CommandKind, tail, trigger string) Command {
	switch k {
	case CommandHelp:
		return Command{Kind: CommandHelp, Reply: HelpText(trigger)}
	case CommandCancel:
		return Command{Kind: CommandCancel, Text: tail}
	default:
		return Command{Kind: k}
	}
}

// HelpText is the reply to `<trigger> help`.
func HelpText(trigger string) string {
	if trigger = strings.TrimSpace(trigger); trigger == "" {
		trigger = DefaultTrigger
	}
	t := inlineCodeSafe(trigger)
	return "**asb commands** (start the first line of a new comment with them):\n\n" +
		"| command | what it does |\n|---|---|\n" +
		"| `" + t + " <ask>` | hand the agent a task; the ask may continue on the next lines. While the agent waits for an answer, this answers it. |\n" +
		"| `" + t + " new <ask>` | start a fresh session instead of continuing this thread's |\n" +
		"| `" + t + " status` | show what the agent on this thread is doing |\n" +
		"| `" + t + " cancel` | stop the running task (anything after the first line is kept as the reason) |\n" +
		"| `" + t + " help` | show this help |\n\n" +
		"Quoted lines and code blocks never trigger a command, and edits of a comment are ignored: post a new comment instead."
}

// cutTrigger reports whether line starts with trigger (case-insensitive)
// followed by white space or the end of the line, and returns what
// follows.
func cutTrigger(line, trigger string) (string, bool) {
	i := 0
	for _, tr := range trigger {
		if i >= len(line) {
			return "", false
		}
		lr, n := utf8.DecodeRuneInString(line[i:])
		if lr != tr && !equalFoldRune(lr, tr) {
			return "", false
		}
		i += n
	}
	rest := line[i:]
	if rest != "" {
		r, _ := utf8.DecodeRuneInString(rest)
		if !unicode.IsSpace(r) {
			return "", false
		}
	}
	return rest, true
}

func equalFoldRune(a, b rune) bool {
	for f := unicode.SimpleFold(a); f != a; f = unicode.SimpleFold(f) {
		if f == b {
			return true
		}
	}
	return false
}

// cutWord splits off the first white-space separated word.
func cutWord(s string) (word, more string) {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i:])
}

func joinAsk(first, tail, sep string) string {
	first = strings.TrimSpace(first)
	switch {
	case first == "":
		return tail
	case tail == "":
		return first
	}
	return first + sep + tail
}

// trimBlankLines drops leading blank lines and trailing white space but
// keeps the first content line's indentation (it may be code).
func trimBlankLines(s string) string {
	for {
		line, rest, found := strings.Cut(s, "\n")
		if !found || strings.TrimSpace(line) != "" {
			break
		}
		s = rest
	}
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return strings.TrimRightFunc(s, unicode.IsSpace)
}

// indentColumns counts the columns of leading white space, tabs advancing
// to the next multiple of four as CommonMark counts them.
func indentColumns(line string) int {
	col := 0
	for _, r := range line {
		switch r {
		case ' ':
			col++
		case '\t':
			col += 4 - col%4
		default:
			return col
		}
	}
	return col
}

// suggest returns the subcommand w is a likely typo of, or "".
func suggest(w string) string {
	if len(w) < 3 || len(w) > 12 {
		return ""
	}
	for _, r := range w {
		if r < 'a' || r > 'z' {
			return ""
		}
	}
	limit := 1
	if len(w) >= 6 {
		limit = 2
	}
	best, bestD := "", limit+1
	for _, s := range suggestable {
		if d := osaDistance(w, s); d > 0 && d < bestD {
			best, bestD = s, d
		}
	}
	return best
}

// osaDistance is the optimal string alignment distance (Levenshtein plus
// adjacent transpositions, so "hlep" is one edit from "help") between two
// short ASCII words.
func osaDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// Sanitize removes what a reader of a rendered GitHub comment cannot see
// but an agent reading the raw text would: HTML comments (an unterminated
// one hides the rest of the comment, as GitHub renders it), invisible
// format characters (zero-width spaces and joiners, bidi controls, BOM,
// tag characters, soft hyphens), control characters other than tab and
// newline, and invalid UTF-8. Line endings become "\n". The result is
// never longer than the input.
func Sanitize(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	s = stripHTMLComments(s)
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if r == utf8.RuneError && n == 1 {
			continue
		}
		if invisible(r) {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// invisible reports characters that change how text reads without being
// seen.
func invisible(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case unicode.Is(unicode.Cc, r), unicode.Is(unicode.Cf, r):
		// Cf covers U+200B–U+200F, U+202A–U+202E, U+2060–U+2064,
		// U+2066–U+2069, U+FEFF, U+00AD and the tag block U+E0000–U+E007F.
		return true
	case r == '\u115F' || r == '\u1160' || r == '\u3164' || r == '\uFFA0':
		// Hangul fillers render as blank space but are letters.
		return true
	}
	return false
}

func stripHTMLComments(s string) string {
	if !strings.Contains(s, "<!--") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for {
		i := strings.Index(s, "<!--")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		j := strings.Index(s[i+4:], "-->")
		if j < 0 {
			return b.String()
		}
		s = s[i+4+j+3:]
	}
}

// inlineCodeSafe makes s usable inside a single-backtick code span on one
// line.
func inlineCodeSafe(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '`' || r == '\n' || r == '\r' {
			return '\''
		}
		return r
	}, s)
	if len(s) > 64 {
		s = truncateUTF8(s, 64) + "…"
	}
	return s
}

// truncateUTF8 cuts s to at most n bytes without splitting a rune.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
