package agent

import "strings"

// Summary is what a UI or a final report needs from one run's records:
// the agent session to resume, the outcome, the cost, the checklist and
// what the agent did. Build one with Summarize, or incrementally with Add
// as a stream is read; the zero value is ready to use.
type Summary struct {
	// SessionID is the session id of the first system_init record (the
	// value for `claude --resume`), else the first session id seen on
	// any record.
	SessionID string `json:"session_id,omitempty"`
	// Model is the init event's model, else the last assistant message's.
	Model string `json:"model,omitempty"`

	// Done reports that a result event was seen; the fields below up to
	// PermissionDenials come from the last one.
	Done    bool   `json:"done"`
	Subtype string `json:"subtype,omitempty"`
	IsError bool   `json:"is_error,omitempty"`
	// Result is the result event's text.
	Result            string             `json:"result,omitempty"`
	Errors            []string           `json:"errors,omitempty"`
	TotalCostUSD      float64            `json:"total_cost_usd,omitempty"`
	NumTurns          int                `json:"num_turns,omitempty"`
	DurationMS        int64              `json:"duration_ms,omitempty"`
	DurationAPIMS     int64              `json:"duration_api_ms,omitempty"`
	PermissionDenials []PermissionDenial `json:"permission_denials,omitempty"`
	// Usage is the result event's usage; until there is one, the sum of
	// each distinct assistant message's usage seen so far.
	Usage Usage `json:"usage"`

	// LastText is the last assistant text, a fallback summary for a run
	// that ended without a result.
	LastText string `json:"last_text,omitempty"`
	// Todos is the checklist of the latest TodoWrite call.
	Todos []Todo `json:"todos,omitempty"`
	// ToolUses counts tool calls by tool name (TodoWrite included).
	ToolUses map[string]int `json:"tool_uses,omitempty"`
	// ToolErrors counts tool results flagged is_error (denials included).
	ToolErrors int `json:"tool_errors,omitempty"`
	// Records counts the records added.
	Records int `json:"records"`

	initSeen    bool
	initModel   bool
	resultUsage bool
	msgUsage    map[string]Usage
	msgOrder    []string
	anonUsage   Usage
}

// Summarize folds records into a Summary.
func Summarize(events []Event) Summary {
	var s Summary
	for _, e := range events {
		s.Add(e)
	}
	return s
}

// Add folds one more record into the summary.
func (s *Summary) Add(e Event) {
	s.Records++
	if e.Kind == KindSystemInit && !s.initSeen {
		s.initSeen = true
		if e.SessionID != "" {
			s.SessionID = e.SessionID
		}
		if e.Model != "" {
			s.Model = e.Model
			s.initModel = true
		}
	}
	if s.SessionID == "" {
		s.SessionID = e.SessionID
	}
	if e.Type == "assistant" {
		if e.Model != "" && !s.initModel {
			s.Model = e.Model
		}
		if e.Usage != nil {
			if e.MessageID == "" {
				// No id to deduplicate by: count the first block only.
				if e.Index == 0 {
					s.anonUsage = s.anonUsage.Add(*e.Usage)
				}
			} else {
				if s.msgUsage == nil {
					s.msgUsage = map[string]Usage{}
				}
				if _, ok := s.msgUsage[e.MessageID]; !ok {
					s.msgOrder = append(s.msgOrder, e.MessageID)
				}
				// A message's usage grows while it streams; keep the latest.
				s.msgUsage[e.MessageID] = *e.Usage
			}
			if !s.resultUsage {
				s.Usage = s.messageUsage()
			}
		}
	}
	switch e.Kind {
	case KindAssistantText:
		if strings.TrimSpace(e.Text) != "" {
			s.LastText = e.Text
		}
	case KindToolUse, KindTodo:
		if s.ToolUses == nil {
			s.ToolUses = map[string]int{}
		}
		s.ToolUses[e.ToolName]++
		if e.Kind == KindTodo {
			s.Todos = e.Todos
		}
	case KindToolResult:
		if e.IsError {
			s.ToolErrors++
		}
	case KindResult:
		s.Done = true
		s.Subtype = e.Subtype
		s.IsError = e.IsError
		s.Result = e.Text
		s.Errors = e.Errors
		s.TotalCostUSD = e.TotalCostUSD
		s.NumTurns = e.NumTurns
		s.DurationMS = e.DurationMS
		s.DurationAPIMS = e.DurationAPIMS
		s.PermissionDenials = e.PermissionDenials
		if e.Usage != nil {
			s.resultUsage = true
			s.Usage = *e.Usage
		}
	}
}

func (s *Summary) messageUsage() Usage {
	u := s.anonUsage
	for _, id := range s.msgOrder {
		u = u.Add(s.msgUsage[id])
	}
	return u
}

// Text is the best one-paragraph account of the run: the result text,
// else the result's errors, else the last assistant text.
func (s Summary) Text() string {
	if strings.TrimSpace(s.Result) != "" {
		return s.Result
	}
	if len(s.Errors) > 0 {
		return strings.Join(s.Errors, "\n")
	}
	return s.LastText
}

// Failed reports a finished run whose result is an error.
func (s Summary) Failed() bool {
	return s.Done && (s.IsError || (s.Subtype != "" && s.Subtype != SubtypeSuccess))
}

// SessionID returns the agent session id of a run's records (see
// Summary.SessionID).
func SessionID(events []Event) string { return Summarize(events).SessionID }

// FinalResult returns the last result record, if any.
func FinalResult(events []Event) (Event, bool) {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Kind == KindResult {
			return events[i], true
		}
	}
	return Event{}, false
}

// Checklist returns the checklist of the latest TodoWrite call.
func Checklist(events []Event) []Todo { return Summarize(events).Todos }

// ToolCounts counts tool calls by tool name.
func ToolCounts(events []Event) map[string]int { return Summarize(events).ToolUses }
