package app

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// GitHubAppCredentials are what GitHub hands back when the manifest flow
// creates the App. The private key and the two secrets are sealed at rest
// and never rendered; String keeps them out of logs and errors.
type GitHubAppCredentials struct {
	AppID         int64  `json:"app_id"`
	Slug          string `json:"slug"`
	HTMLURL       string `json:"html_url"`
	ClientID      string `json:"client_id"`
	ClientSecret  string `json:"client_secret"`
	WebhookSecret string `json:"webhook_secret"`
	PrivateKeyPEM string `json:"pem"`
}

// String names the App without any secret.
func (c GitHubAppCredentials) String() string {
	return fmt.Sprintf("GitHub App %d (%s)", c.AppID, c.Slug)
}

// GoString keeps %#v as safe as %v.
func (c GitHubAppCredentials) GoString() string { return c.String() }

// gitHubAppSecret is the name and seal label of the stored App; the label
// binds the sealed bytes to this row so they cannot be moved to another.
const gitHubAppSecret = "github-app"

// SaveGitHubApp seals and stores the App created by the manifest flow
// (an operator's act: /setup is behind the operator's sign-in), replacing
// any earlier one, and records it in the audit log. It is a function, not
// a Service method, because the App must be read before the Service exists.
func SaveGitHubApp(ctx context.Context, store Store, secrets Secrets, c GitHubAppCredentials) error {
	if c.AppID <= 0 || c.PrivateKeyPEM == "" || c.WebhookSecret == "" {
		return Errorf(EINVALID, "GitHub did not return the App's id, private key and webhook secret")
	}
	plain, err := json.Marshal(c)
	if err != nil {
		return WrapError(EINTERNAL, err, "encode the GitHub App")
	}
	sealed, err := secrets.Seal(plain, gitHubAppSecret)
	if err != nil {
		return WrapError(EINTERNAL, err, "seal the GitHub App")
	}
	return store.Tx(ctx, func(tx Tx) error {
		if err := tx.PutSecret(gitHubAppSecret, sealed); err != nil {
			return err
		}
		return tx.AppendAudit(AuditEntry{At: SystemClock{}.Now().Truncate(time.Millisecond), Actor: OperatorActor.Name,
			Action: "github.app.created", Target: c.Slug, Detail: fmt.Sprintf("app id %d", c.AppID)})
	})
}

// LoadGitHubApp returns the App stored by the manifest flow, if any.
func LoadGitHubApp(ctx context.Context, store Store, secrets Secrets) (GitHubAppCredentials, bool, error) {
	var sealed []byte
	var ok bool
	err := store.View(ctx, func(tx Tx) error {
		var err error
		sealed, ok, err = tx.GetSecret(gitHubAppSecret)
		return err
	})
	if err != nil || !ok {
		return GitHubAppCredentials{}, false, err
	}
	plain, err := secrets.Open(sealed, gitHubAppSecret)
	if err != nil {
		return GitHubAppCredentials{}, false, WrapError(EINTERNAL, err, "open the stored GitHub App (was SECRETS_KEY changed?)")
	}
	var c GitHubAppCredentials
	if err := json.Unmarshal(plain, &c); err != nil {
		return GitHubAppCredentials{}, false, WrapError(EINTERNAL, err, "decode the stored GitHub App")
	}
	return c, true, nil
}
