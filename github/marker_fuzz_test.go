package github

import (
	"strings"
	"testing"

	"github.com/asb-dev/asb/app"
)

// FuzzMarkers feeds the parsers of asb's hidden comment markers (the
// tracking comment's and the PR notice's, read back from GitHub after a
// restart) arbitrary comment bodies, and the renderers arbitrary ids.
// Properties: only the first line counts, so a marker quoted or pasted
// further down a comment is never taken for asb's; what is parsed is made
// of safe id characters; and what asb renders parses back to the same
// run, session and state (or to "none"/"unknown" for ids it would not
// print). The seed corpus in testdata/fuzz/FuzzMarkers holds real
// tracking comments and forgeries.
func FuzzMarkers(f *testing.F) {
	for name, d := range trackingCases() {
		f.Add(RenderTracking(d), string(d.View.Current.ID), string(d.View.Session.ID), string(d.View.Current.State), name)
	}
	f.Add("> <!-- asb:tracking run=run_a session=ses_b state=done -->", "run_a", "ses_b", "done", "quoted")
	f.Add("<!-- asb:tracking run=run_a session=ses_b state=done -->\r\nhi", "run_A", "ses_b/..", "bogus", "crlf")
	f.Add("<!-- asb:pr run=run_x -->\nOpened https://github.com/a/b/pull/1 (draft)", "run_x", "", "queued", "pr")
	f.Fuzz(func(t *testing.T, body, run, sess, state, prefix string) {
		for _, b := range []string{body, prefix + "\n" + body} {
			m, ok := ParseTrackingMarker(b)
			first, _, _ := strings.Cut(b, "\n")
			if ok {
				if !strings.HasPrefix(first, markerPrefix) || !safeID(string(m.RunID)) || !safeID(string(m.SessionID)) || m.State == "" {
					t.Fatalf("parsed %+v from first line %q", m, first)
				}
			}
			if id, ok := ParsePRNotice(b); ok && (!strings.HasPrefix(first, prNoticePrefix) || !safeID(string(id))) {
				t.Fatalf("PR notice %q from first line %q", id, first)
			}
		}
		// A marker below the first line never counts.
		if !strings.HasPrefix(prefix, markerPrefix) && !strings.HasPrefix(prefix, prNoticePrefix) && !strings.Contains(prefix, "\n") {
			forged := prefix + "\n" + marker("run_x", "ses_y", app.StateDone) + "\n<!-- asb:pr run=run_x -->"
			if _, ok := ParseTrackingMarker(forged); ok {
				t.Fatalf("a marker on the second line counted: %q", forged)
			}
			if _, ok := ParsePRNotice(forged); ok {
				t.Fatalf("a PR notice on the second line counted: %q", forged)
			}
		}
		// What asb renders reads back.
		m, ok := ParseTrackingMarker(marker(app.RunID(run), app.SessionID(sess), app.RunState(state)) + "\n" + body)
		if !ok {
			t.Fatalf("asb's own marker for %q %q %q does not parse", run, sess, state)
		}
		wantRun, wantSess, wantState := run, sess, state
		if !safeID(run) {
			wantRun = "none"
		}
		if !safeID(sess) {
			wantSess = "none"
		}
		if !app.RunState(state).Valid() {
			wantState = "unknown"
		}
		if string(m.RunID) != wantRun || string(m.SessionID) != wantSess || string(m.State) != wantState {
			t.Fatalf("rendered %q %q %q, read back %+v", run, sess, state, m)
		}
		if notice, ok := RenderPRNotice(app.RunID(run), 1, "https://github.com/acme/widgets/pull/1"); ok {
			if id, ok := ParsePRNotice(notice); !ok || string(id) != run {
				t.Fatalf("PR notice for %q read back as %q %v", run, id, ok)
			}
		}
	})
}
