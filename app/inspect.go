package app

import (
	"context"
	"io"
	"path"
	"strings"
)

// Ask puts a question to the session's read-only co-pilot, which reads the
// workspace, the diff and the driver's log and answers. The driver is never
// paused and never sees it. Follow-up asks continue the co-pilot's thread
// unless newThread is set.
func (s *Service) Ask(ctx context.Context, id SessionID, question string, newThread bool) (AskAnswer, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return AskAnswer{}, err
	}
	if err := CheckText("question", question, s.cfg.Limits.MaxTaskBytes); err != nil {
		return AskAnswer{}, err
	}
	sess, err := s.readSession(ctx, a, id)
	if err != nil {
		return AskAnswer{}, err
	}
	if sess.State != SessionActive || sess.Box.IsZero() {
		return AskAnswer{}, Errorf(ECONFLICT, "session %s has no box to ask about", id)
	}
	resume := sess.AskSessionID
	if newThread {
		resume = ""
	}
	ans, err := s.sandbox.Ask(ctx, sess.Box, AskRequest{Question: question, ResumeAskSession: resume, Timeout: s.cfg.AskTimeout})
	if err != nil {
		return AskAnswer{}, err
	}
	err = s.commit(ctx, func(tx Tx, emit func(Event)) error {
		cur, err := tx.GetSession(id)
		if err != nil {
			return err
		}
		if ans.AgentSessionID != "" && cur.AskSessionID != ans.AgentSessionID {
			cur.AskSessionID = ans.AgentSessionID
			cur.UpdatedAt = s.clock.Now()
			if err := tx.UpdateSession(&cur); err != nil {
				return err
			}
		}
		emit(s.event(id, "", EventAsk, AskData{Question: clip(question, 2000), Answer: clip(ans.Answer, 8000), AskedBy: a.Name, TimedOut: ans.TimedOut}))
		return nil
	})
	return ans, err
}

// readSession loads a session the actor may see, outside a transaction.
func (s *Service) readSession(ctx context.Context, a Actor, id SessionID) (Session, error) {
	var sess Session
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		sess, err = s.visibleSession(tx, a, id)
		return err
	})
	return sess, err
}

// WorkspacePath validates a path inside a box's /workspace: absolute or
// relative to /workspace, cleaned, and never outside it.
func WorkspacePath(p string) (string, error) {
	if len(p) > 4096 || strings.ContainsRune(p, 0) {
		return "", Errorf(EINVALID, "path is too long or contains a NUL byte")
	}
	if p == "" {
		p = "/workspace"
	}
	if !strings.HasPrefix(p, "/") {
		p = "/workspace/" + p
	}
	clean := path.Clean(p)
	// Bounded again once prefixed, so whatever this returns it accepts.
	if len(clean) > 4096 {
		return "", Errorf(EINVALID, "path is too long")
	}
	if clean != "/workspace" && !strings.HasPrefix(clean, "/workspace/") {
		return "", Errorf(EINVALID, "path %q is outside /workspace", clip(p, 200))
	}
	// The controller's own state files are not the agent's output.
	if rest := strings.TrimPrefix(clean, "/workspace/"); strings.HasPrefix(rest, ".agent.") && rest != ".agent.question" && !strings.HasPrefix(rest, ".agent.question/") {
		return "", Errorf(EINVALID, "path %q is asb's own state, not a workspace file", clip(p, 200))
	}
	return clean, nil
}

// Files lists a folder of the session's workspace.
func (s *Service) Files(ctx context.Context, id SessionID, p string) ([]FileInfo, error) {
	sess, clean, err := s.fileTarget(ctx, id, p)
	if err != nil {
		return nil, err
	}
	return s.sandbox.ListFiles(ctx, sess.Box, clean)
}

// ReadFile writes a workspace file of the session to w, at most max bytes.
func (s *Service) ReadFile(ctx context.Context, id SessionID, p string, max int64, w io.Writer) error {
	sess, clean, err := s.fileTarget(ctx, id, p)
	if err != nil {
		return err
	}
	return s.sandbox.ReadFile(ctx, sess.Box, clean, max, w)
}

func (s *Service) fileTarget(ctx context.Context, id SessionID, p string) (Session, string, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return Session{}, "", err
	}
	clean, err := WorkspacePath(p)
	if err != nil {
		return Session{}, "", err
	}
	sess, err := s.readSession(ctx, a, id)
	if err != nil {
		return Session{}, "", err
	}
	if sess.Box.IsZero() || sess.State != SessionActive {
		return Session{}, "", Errorf(ECONFLICT, "session %s has no box (it was torn down or never started)", id)
	}
	return sess, clean, nil
}

// SessionForThread returns the active session of a pull request or issue
// (see Origin.ThreadKey), if there is one the actor may see.
func (s *Service) SessionForThread(ctx context.Context, key string) (SessionView, bool, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return SessionView{}, false, err
	}
	var v SessionView
	var found bool
	err = s.store.View(ctx, func(tx Tx) error {
		sess, ok, err := tx.ActiveSessionByThread(key)
		if err != nil || !ok || !a.sees(sess.Owner) {
			return err
		}
		runs, err := tx.ListRuns(sess.ID)
		if err != nil {
			return err
		}
		v, found = buildView(sess, runs), true
		return nil
	})
	return v, found, err
}

// SetTrackingComment records the comment a surface edits in place to show
// a run's progress, so a restarted controller edits the same comment
// instead of posting a second one.
func (s *Service) SetTrackingComment(ctx context.Context, id RunID, commentID int64) error {
	return s.commit(ctx, func(tx Tx, emit func(Event)) error {
		r, err := tx.GetRun(id)
		if err != nil {
			return err
		}
		if r.Origin.TrackingCommentID == commentID {
			return nil
		}
		r.Origin.TrackingCommentID = commentID
		return tx.UpdateRun(&r)
	})
}

// AnsweredWith reports whether a question of the session was answered by
// the given delivery or comment (either may be zero).
func (s *Service) AnsweredWith(ctx context.Context, id SessionID, deliveryID string, commentID int64) (bool, error) {
	a, err := s.actor(ctx)
	if err != nil {
		return false, err
	}
	var found bool
	err = s.store.View(ctx, func(tx Tx) error {
		if _, err := s.visibleSession(tx, a, id); err != nil {
			return err
		}
		runs, err := tx.ListRuns(id)
		if err != nil {
			return err
		}
		for _, r := range runs {
			qs, err := tx.ListQuestions(r.ID)
			if err != nil {
				return err
			}
			for _, q := range qs {
				if (deliveryID != "" && q.AnswerDelivery == deliveryID) || (commentID != 0 && q.AnswerComment == commentID) {
					found = true
					return nil
				}
			}
		}
		return nil
	})
	return found, err
}
