package app

import (
	"context"
	"fmt"
	"time"
)

// Run recovers work left by a previous process and then schedules queued
// runs until ctx ends. It returns after every worker it started has
// stopped. Boxes and agents keep running; the next Run re-attaches them.
func (s *Service) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return Errorf(ECONFLICT, "the scheduler is already running")
	}
	s.running = true
	root, cancel := context.WithCancel(ctx)
	s.mu.Unlock()
	defer func() {
		cancel()
		s.wg.Wait()
		s.mu.Lock()
		s.running = false
		s.mu.Unlock()
	}()
	s.rootCtx.Store(&root)

	// Re-attach runs that were under way: starting runs repeat their
	// (idempotent) start, running runs resume reading the agent's output.
	var live []Run
	err := s.store.View(root, func(tx Tx) error {
		var err error
		live, err = tx.ListRunsByState(StateStarting, StateRunning)
		return err
	})
	if err != nil {
		if root.Err() != nil {
			return nil // stopped before recovery finished; the next start redoes it
		}
		return fmt.Errorf("recover runs: %w", err)
	}
	for _, r := range live {
		s.log.Info("re-attaching run", "run", r.ID, "session", r.SessionID, "state", r.State)
		s.notice(root, r, "the controller restarted and picked this run up again; nothing was lost")
		s.startWorker(r.ID)
	}
	s.kick()
	for {
		select {
		case <-root.Done():
			return nil
		case <-s.wake:
		case <-s.clock.After(10 * s.cfg.PollInterval):
			// A safety net: dispatch is cheap and idempotent.
		}
		if err := s.dispatch(root); err != nil && !isCtxErr(err) {
			s.log.Error("dispatch queued runs", "err", err)
		}
	}
}

// dispatch starts the oldest queued run of every session that has no
// active run, up to MaxActiveRuns runs starting or running at once.
func (s *Service) dispatch(ctx context.Context) error {
	var queued []Run
	var busy int
	err := s.store.View(ctx, func(tx Tx) error {
		var err error
		queued, err = tx.ListRunsByState(StateQueued)
		if err != nil {
			return err
		}
		counts, err := tx.CountRunsByState()
		busy = counts[StateStarting] + counts[StateRunning]
		return err
	})
	if err != nil {
		return err
	}
	seen := map[SessionID]bool{}
	for _, r := range queued {
		if busy >= s.cfg.MaxActiveRuns {
			return nil
		}
		if seen[r.SessionID] {
			continue // only the head of each session's FIFO may start
		}
		seen[r.SessionID] = true
		started := false
		err := s.commit(ctx, func(tx Tx, emit func(Event)) error {
			started = false
			cur, err := tx.GetRun(r.ID)
			if err != nil || cur.State != StateQueued {
				return err
			}
			runs, err := tx.ListRuns(cur.SessionID)
			if err != nil {
				return err
			}
			for _, o := range runs {
				if o.State.Active() || (o.State == StateQueued && o.Seq < cur.Seq) {
					return nil // not its turn yet
				}
			}
			if err := s.moveRun(tx, emit, &cur, StateStarting, "", s.clock.Now()); err != nil {
				return err
			}
			started = true
			return nil
		})
		if err != nil {
			return err
		}
		if started {
			busy++
			s.startWorker(r.ID)
		}
	}
	return nil
}

// startWorker drives a run in its own goroutine, once.
func (s *Service) startWorker(id RunID) {
	rootp := s.rootCtx.Load()
	if rootp == nil {
		return // not scheduling (yet); Run re-attaches live runs at start
	}
	root := *rootp
	s.mu.Lock()
	if _, ok := s.workers[id]; ok || root.Err() != nil {
		s.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(root)
	s.workers[id] = cancel
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.workers, id)
			s.mu.Unlock()
			cancel()
			s.kick()
		}()
		s.drive(ctx, id)
	}()
}

func (s *Service) stopWorker(id RunID) {
	s.mu.Lock()
	cancel := s.workers[id]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// loadRun reads a run and its session.
func (s *Service) loadRun(ctx context.Context, id RunID) (r Run, sess Session, err error) {
	err = s.store.View(ctx, func(tx Tx) error {
		if r, err = tx.GetRun(id); err != nil {
			return err
		}
		sess, err = tx.GetSession(r.SessionID)
		return err
	})
	return r, sess, err
}

// drive moves one run forward until it waits, ends, or ctx ends.
func (s *Service) drive(ctx context.Context, id RunID) {
	log := s.log.With("run", id)
	backoff := s.cfg.PollInterval
	// told is the last failure people were told about, so a step that
	// keeps failing the same way is reported once, not at every retry.
	told := ""
	for ctx.Err() == nil {
		r, sess, err := s.loadRun(ctx, id)
		if err != nil {
			if !isCtxErr(err) {
				log.Error("load run", "err", err)
			}
			return
		}
		switch r.State {
		case StateStarting:
			err = s.start(ctx, r, sess)
		case StateRunning:
			err = s.follow(ctx, r, sess)
		default:
			return // waiting or ended: nothing to drive
		}
		if err == nil {
			backoff, told = s.cfg.PollInterval, ""
			continue
		}
		if ctx.Err() != nil {
			return
		}
		switch ErrorCode(err) {
		case ECONFLICT:
			// Someone else moved the run (cancel, teardown): re-read it.
			continue
		case EUNAVAILABLE, EINTERNAL, ERATELIMIT:
			// Hosts come and go and rate limits reset (finish returns a
			// forge's rate limit for exactly this); keep the run and retry
			// with backoff.
			log.Warn("run step failed; retrying", "state", r.State, "err", err, "retry_in", backoff)
			if msg := oneLine(ErrorMessage(err)); msg != told {
				told = msg
				s.notice(ctx, r, fmt.Sprintf("%s; retrying (next try in %s)", msg, backoff))
			}
			select {
			case <-ctx.Done():
				return
			case <-s.clock.After(backoff):
			}
			backoff = min(backoff*2, 30*time.Second)
		default:
			s.fail(ctx, id, r.State, ErrorMessage(err))
			log.Warn("run failed", "err", err)
			return
		}
	}
}

// start gets the session a box and moves the run to running. It is safe to
// repeat after a restart: EnsureBox is idempotent per session.
func (s *Service) start(ctx context.Context, r Run, sess Session) error {
	allow, err := s.mcpEgress(ctx, sess)
	if err != nil {
		return err
	}
	box, err := s.sandbox.EnsureBox(WithSession(ctx, sess), BoxSpec{Session: sess.ID, Owner: sess.Owner, Sources: sess.Sources, AllowDomains: allow})
	if err != nil {
		return err
	}
	s.releaseWorkspaces(ctx, sess)
	return s.commit(ctx, func(tx Tx, emit func(Event)) error {
		cur, err := tx.GetRun(r.ID)
		if err != nil {
			return err
		}
		if cur.State != StateStarting {
			return Errorf(ECONFLICT, "run moved on")
		}
		sess, err := tx.GetSession(cur.SessionID)
		if err != nil {
			return err
		}
		now := s.clock.Now()
		if sess.Box != box {
			sess.Box = box
			sess.UpdatedAt = now
			if err := tx.UpdateSession(&sess); err != nil {
				return err
			}
			emit(s.event(sess.ID, "", EventSessionUpdated, SessionData{Box: &box}))
		}
		cur.Turn = 1
		cur.AgentOffset = 0
		return s.moveRun(tx, emit, &cur, StateRunning, "", now)
	})
}

// turnPrompt is what the agent is told in a turn: the run's prompt for the
// first turn, the latest answer for later ones.
func (s *Service) turnPrompt(ctx context.Context, r Run) (string, error) {
	if r.Turn <= 1 {
		return r.Prompt, nil
	}
	var prompt string
	err := s.store.View(ctx, func(tx Tx) error {
		qs, err := tx.ListQuestions(r.ID)
		if err != nil {
			return err
		}
		for i := len(qs) - 1; i >= 0; i-- {
			if !qs[i].AnsweredAt.IsZero() {
				prompt = qs[i].Answer
				return nil
			}
		}
		return Errorf(EINTERNAL, "run %s turn %d has no answer to resume with", r.ID, r.Turn)
	})
	return prompt, err
}

// follow launches the run's current turn (idempotently) and reads its
// output until the agent exits, then records the outcome.
func (s *Service) follow(ctx context.Context, r Run, sess Session) error {
	prompt, err := s.turnPrompt(ctx, r)
	if err != nil {
		return err
	}
	ref := TurnRef{RunID: r.ID, Turn: r.Turn}
	s.mu.Lock()
	secrets := s.secrets[ref]
	s.mu.Unlock()
	resume := sess.AgentSessionID
	if r.Kind == RunTask && r.Turn <= 1 {
		resume = "" // the session's first turn starts the conversation
	}
	mcps, err := s.boxMCPServers(ctx, sess.Owner)
	if err != nil {
		return err
	}
	if err := s.sandbox.Launch(ctx, sess.Box, Turn{TurnRef: ref, Prompt: prompt, ResumeAgentSession: resume, Workdir: workdir(sess), Secrets: secrets, MCPServers: mcps}); err != nil {
		return err
	}
	// The launch consumed the secrets; forget them at once.
	s.mu.Lock()
	delete(s.secrets, ref)
	s.mu.Unlock()

	offset := r.AgentOffset
	for {
		p, err := s.sandbox.Poll(ctx, sess.Box, ref, offset)
		if err != nil {
			return err
		}
		done, err := s.record(ctx, r.ID, ref, p)
		if err != nil {
			return err
		}
		offset = p.Offset
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.clock.After(s.cfg.PollInterval):
		}
	}
}

// record stores one poll's records and, when the agent has exited, the
// turn's outcome. It reports whether the turn is over.
func (s *Service) record(ctx context.Context, id RunID, ref TurnRef, p Progress) (bool, error) {
	var finished bool
	var publish bool
	err := s.commit(ctx, func(tx Tx, emit func(Event)) error {
		finished, publish = false, false
		r, err := tx.GetRun(id)
		if err != nil {
			return err
		}
		if r.State != StateRunning || r.Turn != ref.Turn {
			return Errorf(ECONFLICT, "run moved on")
		}
		if p.Offset < r.AgentOffset {
			return Errorf(EINTERNAL, "agent stream went backwards (%d < %d)", p.Offset, r.AgentOffset)
		}
		now := s.clock.Now()
		for _, rec := range p.Records {
			e := s.event(r.SessionID, r.ID, EventAgent, nil)
			e.Data = rawRecord(rec)
			emit(e)
		}
		r.AgentOffset = p.Offset
		if p.Result != nil {
			r.Summary = clip(p.Result.Summary, 8000)
			r.Usage.InputTokens += p.Result.Usage.InputTokens
			r.Usage.OutputTokens += p.Result.Usage.OutputTokens
			r.Usage.CostUSD += p.Result.Usage.CostUSD
			r.Usage.Turns += p.Result.Usage.Turns
		}
		if p.AgentSessionID != "" {
			sess, err := tx.GetSession(r.SessionID)
			if err != nil {
				return err
			}
			if sess.AgentSessionID != p.AgentSessionID {
				sess.AgentSessionID = p.AgentSessionID
				sess.UpdatedAt = now
				if err := tx.UpdateSession(&sess); err != nil {
					return err
				}
			}
		}
		if !p.Exited {
			r.UpdatedAt = now
			return tx.UpdateRun(&r)
		}
		finished = true
		r.ExitCode = p.ExitCode
		if q := clip(p.Question, s.cfg.Limits.MaxQuestionBytes); q != "" {
			if err := tx.InsertQuestion(&Question{RunID: r.ID, Text: q, AskedAt: now}); err != nil {
				return err
			}
			r.Question = q
			emit(s.event(r.SessionID, r.ID, EventRunQuestion, QuestionData{Text: q}))
			return s.moveRun(tx, emit, &r, StateWaiting, "the agent asked a question", now)
		}
		// Mark publishing before acting on it, so a restart knows a push
		// may already have happened.
		r.Publishing = true
		r.UpdatedAt = now
		publish = true
		return tx.UpdateRun(&r)
	})
	if err != nil || !finished || !publish {
		return finished, err
	}
	return true, s.finish(ctx, id)
}

// finish publishes a run whose agent exited and moves it to done or failed.
// Publishing is idempotent, so repeating finish after a restart is safe.
func (s *Service) finish(ctx context.Context, id RunID) error {
	r, sess, err := s.loadRun(ctx, id)
	if err != nil {
		return err
	}
	var result PublishResult
	var note string
	failed := r.ExitCode != 0
	sources := publishable(sess.Sources)
	var trees []BundleInfo
	if uploaded := uploadedTrees(sess.Sources); !failed && len(uploaded) > 0 {
		// An uploaded working tree names no repository to push to: its
		// commits wait on the controller until the uploader fetches them.
		bundles, err := s.sandbox.Collect(ctx, sess.Box, uploaded)
		if err != nil {
			return err
		}
		trees, note = bundleInfos(bundles)
	}
	if !failed && len(sources) > 0 {
		bundles, err := s.sandbox.Collect(ctx, sess.Box, sources)
		if err != nil {
			return err
		}
		switch {
		case len(bundles) == 0:
			note = joinNotes(note, "no new commits")
		case s.forge == nil:
			note = joinNotes(note, "no forge configured: commits stay in the box")
		default:
			result, err = s.forge.Publish(ctx, PublishRequest{Session: sess, Run: r, Bundles: bundles})
			if err != nil {
				if ErrorCode(err) == EUNAVAILABLE || ErrorCode(err) == EINTERNAL || ErrorCode(err) == ERATELIMIT {
					return err // transient: retried by drive with backoff
				}
				failed = true
				note = "publishing failed: " + ErrorMessage(err)
			}
		}
	}
	result.Bundles = trees
	return s.commit(ctx, func(tx Tx, emit func(Event)) error {
		cur, err := tx.GetRun(id)
		if err != nil {
			return err
		}
		if cur.State != StateRunning {
			return nil
		}
		cur.Result = result
		cur.Publishing = false
		to, reason := StateDone, note
		if failed {
			to = StateFailed
			switch {
			case cur.ExitCode == -1:
				reason = "the agent was stopped before it finished: its box crashed or restarted, or the process was killed"
			case cur.ExitCode != 0:
				reason = fmt.Sprintf("the agent exited with code %d", cur.ExitCode)
			}
			cur.Error = oneLine(reason)
		}
		return s.moveRun(tx, emit, &cur, to, reason, s.clock.Now())
	})
}

// fail moves a run that cannot go on to failed.
func (s *Service) fail(ctx context.Context, id RunID, from RunState, reason string) {
	err := s.commit(ctx, func(tx Tx, emit func(Event)) error {
		r, err := tx.GetRun(id)
		if err != nil {
			return err
		}
		if r.State != from || !CanTransition(r.State, StateFailed) {
			return nil
		}
		r.Error = oneLine(reason)
		return s.moveRun(tx, emit, &r, StateFailed, reason, s.clock.Now())
	})
	if err != nil && !isCtxErr(err) {
		s.log.Error("mark run failed", "run", id, "err", err)
	}
}

// notice stores and publishes an EventRunNotice. It is best effort: a
// notice that cannot be stored is logged and the run goes on.
func (s *Service) notice(ctx context.Context, r Run, text string) {
	err := s.commit(ctx, func(tx Tx, emit func(Event)) error {
		emit(s.event(r.SessionID, r.ID, EventRunNotice, NoticeData{State: r.State, Text: clip(text, 1000)}))
		return nil
	})
	if err != nil && !isCtxErr(err) {
		s.log.Warn("store a run notice", "run", r.ID, "err", err)
	}
}
