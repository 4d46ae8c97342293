package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// state is one conversation, kept in $HOME/.scripted-agent/<id>.json.
type state struct {
	SessionID string `json:"session_id"`
	// Cwd is where the conversation started; resuming elsewhere fails,
	// as with Claude Code, whose sessions are keyed by project directory.
	Cwd string `json:"cwd"`
	// Remaining holds the directives of the current script not yet run
	// (after an ask, the rest of the script).
	Remaining []string `json:"remaining"`
	// Question is the last question asked, until the next turn.
	Question string `json:"question,omitempty"`
	// Prompts and Answers record every turn's prompt, and the prompts of
	// turns that resumed after an ask.
	Prompts []string `json:"prompts"`
	Answers []string `json:"answers"`
	// Turns counts invocations of this conversation.
	Turns   int       `json:"turns"`
	Updated time.Time `json:"updated"`
}

var sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

func stateDir() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".scripted-agent"), nil
}

func statePath(id string) (string, error) {
	if !sessionIDPattern.MatchString(id) || id == "." || id == ".." {
		return "", fmt.Errorf("invalid session id %q", id)
	}
	dir, err := stateDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, id+".json"), nil
}

// errNoConversation reports a session that is unknown (or unknown here).
var errNoConversation = errors.New("no conversation")

// loadState reads a conversation and checks it belongs to cwd.
func loadState(id, cwd string) (*state, error) {
	p, err := statePath(id)
	if err != nil {
		return nil, errNoConversation
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errNoConversation
	}
	if err != nil {
		return nil, err
	}
	var s state
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("state %s: %w", p, err)
	}
	if s.Cwd != cwd {
		return nil, errNoConversation
	}
	return &s, nil
}

// latestState finds the most recently updated conversation of cwd (-c).
func latestState(cwd string) (*state, error) {
	dir, err := stateDir()
	if err != nil {
		return nil, err
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	var best *state
	for _, m := range matches {
		data, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		var s state
		if json.Unmarshal(data, &s) != nil || s.Cwd != cwd {
			continue
		}
		if best == nil || s.Updated.After(best.Updated) {
			best = &s
		}
	}
	if best == nil {
		return nil, errNoConversation
	}
	return best, nil
}

// save writes the state atomically (temp file and rename).
func (s *state) save() error {
	p, err := statePath(s.SessionID)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	s.Updated = time.Now().UTC()
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".state-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

func stateExists(id string) bool {
	p, err := statePath(id)
	if err != nil {
		return false
	}
	_, err = os.Stat(p)
	return err == nil
}
