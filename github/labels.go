package github

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/asb-dev/asb/app"
)

// State labels: while a label-triggered run (app.OriginGitHubLabel) moves,
// its issue carries exactly one of them. The trigger label (AGENT_LABEL,
// "agent" by default) is left alone, also when the run is done: removing
// it would look like a person's decision and re-adding it is how people
// ask again.
const (
	LabelWorking = "agent:working"
	LabelWaiting = "agent:waiting"
	LabelDone    = "agent:done"
	LabelFailed  = "agent:failed"
)

// StateLabels lists every state label.
var StateLabels = []string{LabelWorking, LabelWaiting, LabelDone, LabelFailed}

// StateLabel is the label an issue carries while its run is in state s.
func StateLabel(s app.RunState) string {
	switch s {
	case app.StateQueued, app.StateStarting, app.StateRunning:
		return LabelWorking
	case app.StateWaiting:
		return LabelWaiting
	case app.StateDone:
		return LabelDone
	case app.StateFailed, app.StateCancelled:
		return LabelFailed
	}
	return ""
}

// applyStateLabel adds want and then removes the other state labels (a
// label the issue does not carry is fine), so the issue never shows no
// state at all. Repeating it is harmless.
func applyStateLabel(ctx context.Context, api GitHubAPI, inst int64, repo string, number int, want string) error {
	if err := api.AddLabels(ctx, inst, repo, number, []string{want}); err != nil {
		return fmt.Errorf("add label %s: %w", want, err)
	}
	for _, l := range StateLabels {
		if l == want {
			continue
		}
		if err := api.RemoveLabel(ctx, inst, repo, number, l); err != nil {
			return fmt.Errorf("remove label %s: %w", l, err)
		}
	}
	return nil
}

// PR notice: the one comment on an issue that links the draft PR a
// label-triggered run opened. Its hidden first line names the run, so a
// restarted controller finds it instead of posting it again.

const prNoticePrefix = "<!-- asb:pr "

var prNoticeRE = regexp.MustCompile(`^<!-- asb:pr run=([a-z0-9_]{1,64}) -->$`)

// ParsePRNotice returns the run a PR notice comment was posted for.
func ParsePRNotice(body string) (app.RunID, bool) {
	if !strings.HasPrefix(body, prNoticePrefix) {
		return "", false
	}
	first, _, _ := strings.Cut(body, "\n")
	m := prNoticeRE.FindStringSubmatch(strings.TrimRight(first, "\r"))
	if m == nil {
		return "", false
	}
	return app.RunID(m[1]), true
}

// RenderPRNotice is the issue comment for a run that opened prURL; ok is
// false when there is nothing (safe) to link.
func RenderPRNotice(run app.RunID, number int, prURL string) (string, bool) {
	if !safeURL(prURL) || !safeID(string(run)) {
		return "", false
	}
	return fmt.Sprintf("%srun=%s -->\nOpened %s (draft) — it says Fixes #%d.\n", prNoticePrefix, run, prURL, number), true
}

// postPRNotice posts the PR notice for run unless the issue already has
// it (from before a restart).
func postPRNotice(ctx context.Context, api GitHubAPI, inst int64, o app.Origin, run app.RunID, prURL string) error {
	body, ok := RenderPRNotice(run, o.Number, prURL)
	if !ok {
		return nil
	}
	list, err := api.ListComments(ctx, inst, o.Repo, o.Number)
	if err != nil {
		return fmt.Errorf("list comments: %w", err)
	}
	for _, c := range list {
		if id, ok := ParsePRNotice(c.Body); ok && id == run && botLogin(c.Login, c.UserType) {
			return nil
		}
	}
	_, err = api.CreateComment(ctx, inst, o.Repo, o.Number, body)
	return err
}

// syncIssue brings a label-triggered run's issue up to date: its state
// label and, once done with a pull request, the PR notice. tr remembers
// what this process already did; a new Tracker does it again (labels) or
// checks first (the notice). It reports the first failure, after trying
// the rest.
func (t *Tracker) syncIssue(ctx context.Context, tr trackedIssue, view app.SessionView, run *app.Run) (trackedIssue, error) {
	o := run.Origin
	if o.Kind != app.OriginGitHubLabel || o.Repo == "" || o.Number <= 0 {
		return tr, nil
	}
	// Only the thread's latest label run speaks for the issue's state.
	for i := len(view.Runs) - 1; i >= 0; i-- {
		r := view.Runs[i]
		if r.Origin.Kind == app.OriginGitHubLabel && r.Origin.Repo == o.Repo && r.Origin.Number == o.Number {
			if r.ID != run.ID {
				return tr, nil
			}
			break
		}
	}
	want := StateLabel(run.State)
	needLabel := want != "" && tr.label != want
	needNotice := run.State == app.StateDone && run.Result.PullRequestURL != "" && !tr.noticed
	if !needLabel && !needNotice {
		return tr, nil
	}
	inst, err := t.installation(ctx, o.Repo)
	if err != nil {
		return tr, err
	}
	var first error
	if needLabel {
		if err := applyStateLabel(ctx, t.api, inst, o.Repo, o.Number, want); err != nil {
			first = err
		} else {
			tr.label = want
		}
	}
	if needNotice {
		if err := postPRNotice(ctx, t.api, inst, o, run.ID, run.Result.PullRequestURL); err != nil {
			if first == nil {
				first = fmt.Errorf("PR notice: %w", err)
			}
		} else {
			tr.noticed = true
		}
	}
	return tr, first
}

// trackedIssue is what the Tracker did to a label run's issue.
type trackedIssue struct {
	// label is the state label last applied.
	label string
	// noticed is set once the PR notice is posted (or found).
	noticed bool
}
