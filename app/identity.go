package app

import (
	"context"
	"strings"
	"time"
)

// GitHubAccount is a GitHub login whose personal token an owner stored,
// so that asb can push, open pull requests and read the login's events
// feed as that person. It never carries the token: the token is sealed
// in the store and opened only by GitHubToken and GitHubPusher.
type GitHubAccount struct {
	// ID is "gha_" followed by lowercase base32.
	ID    string    `json:"id"`
	Owner AccountID `json:"owner"`
	// Login is the GitHub login the token belongs to, as GitHub spells it.
	Login string `json:"login"`
	// Name is the profile's display name, if any.
	Name string `json:"name,omitempty"`
	// UserID is the numeric GitHub user id (for noreply commit emails).
	UserID int64    `json:"user_id,omitempty"`
	Orgs   []string `json:"orgs,omitempty"`
	// Scopes are a classic token's OAuth scopes (empty for fine-grained tokens).
	Scopes []string `json:"scopes,omitempty"`
	// TokenType is "fine-grained", "classic" or "unknown", for display.
	TokenType string    `json:"token_type"`
	AddedAt   time.Time `json:"added_at"`
	CheckedAt time.Time `json:"checked_at"`
}

// GitHubIdentity is what probing a token found out about its login.
type GitHubIdentity struct {
	Login  string
	Name   string
	UserID int64
	Orgs   []string
	Scopes []string
}

// GitHubProber asks GitHub about a personal token. Implementations send
// the token only in an Authorization header and never log it.
type GitHubProber interface {
	// Probe identifies the token's login (GET /user), its organisations
	// (GET /user/orgs) and its OAuth scopes (X-OAuth-Scopes). A token
	// GitHub refuses is EUNAUTHORIZED.
	Probe(ctx context.Context, token string) (GitHubIdentity, error)
	// CanPush reports whether the token may push to repo ("owner/name").
	// A repository the token cannot see is false, not an error.
	CanPush(ctx context.Context, token, repo string) (bool, error)
	// Repos lists repositories ("owner/name") the token may push to, at
	// most MaxGitHubRepos.
	Repos(ctx context.Context, token string) ([]string, error)
}

// MaxGitHubRepos bounds the repositories listed for one token.
const MaxGitHubRepos = 300

// MaxGitHubAccounts bounds the accounts one owner may store.
const MaxGitHubAccounts = 20

// NewGitHubAccountID returns a fresh account id.
func NewGitHubAccountID() string { return randomID("gha_") }

// CheckGitHubToken validates a personal token from outside without ever
// echoing it: GitHub's token charset, 20 to 255 bytes.
func CheckGitHubToken(token string) error {
	if token == "" {
		return Errorf(EINVALID, "no token provided")
	}
	if len(token) < 20 || len(token) > 255 {
		return Errorf(EINVALID, "that does not look like a GitHub token (expected 20 to 255 characters)")
	}
	for _, c := range token {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return Errorf(EINVALID, "that does not look like a GitHub token (only letters, digits and '_' are allowed)")
		}
	}
	return nil
}

// GitHubTokenType names a token's kind from its prefix, for display.
func GitHubTokenType(token string) string {
	switch {
	case strings.HasPrefix(token, "github_pat_"):
		return "fine-grained"
	case strings.HasPrefix(token, "ghp_"), strings.HasPrefix(token, "gho_"):
		return "classic"
	}
	return "unknown"
}

// ValidLogin reports whether s can be a GitHub user login (letters,
// digits and '-'; '_' too, for Enterprise managed users' "login_shortcode").
func ValidLogin(s string) bool { return validOwner(s) }

func tokenLabel(id string) string { return "github-account:" + id }
