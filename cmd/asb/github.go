package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	asb "github.com/asb-dev/asb"
	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/sqlite"
	"github.com/asb-dev/asb/cmd/asb/internal/config"
	gh "github.com/asb-dev/asb/github"
)

// gitHub is the GitHub surface: the App (when configured), the clients
// that act as people through their stored tokens, the forge that fetches
// and publishes, the delivery processor, the tracking-comment tracker,
// the webhook receiver and the poller (repositories and events feeds).
type gitHub struct {
	app       *gh.App // nil without a configured App
	users     *gh.UserClients
	forge     *gh.Forge
	slug      string
	tracker   *gh.Tracker
	processor *gh.Processor
	webhook   *gh.Webhook
	poller    *gh.Poller
	// webhookSecret is GITHUB_WEBHOOK_SECRET, else the stored App's.
	webhookSecret string
}

// newGitHub sets up the App (when configured, by env or by the manifest
// flow: stored, env wins), the personal-token clients and the forge.
// Without an App, stored personal tokens still let asb fetch, push and
// answer /agent comments found in their events feeds.
func newGitHub(ctx context.Context, cfg *config.Config, stored *app.GitHubAppCredentials, log *slog.Logger) (*gitHub, error) {
	users, err := gh.NewUserClients(cfg.GitHub.APIURL, nil)
	if err != nil {
		return nil, fmt.Errorf("GitHub API: %w", err)
	}
	g := &gitHub{users: users, webhookSecret: cfg.GitHub.WebhookSecret.Reveal()}
	appID := cfg.GitHub.AppID
	var pem []byte
	switch {
	case appID != 0:
		if pem, err = os.ReadFile(cfg.GitHub.PrivateKeyFile); err != nil {
			return nil, fmt.Errorf("read GITHUB_APP_PRIVATE_KEY_FILE: %w", err)
		}
	case stored != nil:
		appID, pem = stored.AppID, []byte(stored.PrivateKeyPEM)
		if g.webhookSecret == "" {
			g.webhookSecret = stored.WebhookSecret
		}
		log.Info("using the GitHub App created through /setup", "app_id", appID, "slug", stored.Slug)
	}
	if appID != 0 {
		g.app, err = gh.NewApp(gh.AppConfig{AppID: appID, PrivateKeyPEM: pem,
			APIURL: cfg.GitHub.APIURL, WebURL: cfg.GitHub.WebURL, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("GitHub App: %w", err)
		}
		// The App's own login (<slug>[bot]) must never trigger a run.
		if a, _, err := g.app.AppClient().Apps.Get(ctx, ""); err == nil {
			g.slug = a.GetSlug()
		} else {
			log.Warn("could not read the GitHub App; its own comments are still ignored as a bot's", "err", app.ErrorMessage(gh.APIError(err, "read the App")))
		}
	}
	g.forge, err = gh.NewForge(gh.ForgeConfig{App: g.app, Users: users, WebURL: cfg.GitHub.WebURL,
		WorkDir: filepath.Join(cfg.DataDir, "git"), Logger: log})
	if err != nil {
		return nil, fmt.Errorf("GitHub forge: %w", err)
	}
	return g, nil
}

// start wires the processor, tracker, webhook and poller onto the core.
func (g *gitHub) start(cfg *config.Config, svc *app.Service, store *sqlite.Store, log *slog.Logger) error {
	g.forge.SetPushers(svc)
	asUser := gh.StoredTokenClients(g.users, svc.GitHubToken)
	var clients gh.ClientsFunc
	var installation func(context.Context, string) (int64, error)
	if g.app != nil {
		clients, installation = g.app.InstallationClient, g.app.InstallationFor
	}
	trigger := gh.TriggerConfig{Trigger: cfg.GitHub.Trigger, Label: cfg.GitHub.Label, AppSlug: g.slug}
	tracker, err := gh.NewTracker(gh.TrackerOptions{Service: svc, Clients: clients, UserClient: asUser,
		Installation: installation, PublicURL: cfg.PublicURL, WebURL: strings.TrimSuffix(cfg.GitHub.WebURL, "/"),
		Trigger: cfg.GitHub.Trigger, Logger: log})
	if err != nil {
		return err
	}
	processor, err := gh.NewProcessor(gh.ProcessorOptions{
		Service: svc, Deliveries: store, Clients: clients, UserClient: asUser, Trigger: trigger,
		Allow: cfg.GitHub.AllowedLogins, Tracker: tracker, PublicURL: cfg.PublicURL,
		WebURL: strings.TrimSuffix(cfg.GitHub.WebURL, "/"), Logger: log,
		Pending: func(ctx context.Context) ([]gh.Delivery, error) {
			rows, err := store.PendingDeliveries(ctx, 100)
			if err != nil {
				return nil, err
			}
			out := make([]gh.Delivery, len(rows))
			for i, r := range rows {
				out[i] = gh.Delivery{ID: r.ID, Event: r.Event, Action: r.Action, Payload: r.Payload}
			}
			return out, nil
		},
		// A comment on a pull request works on the PR's head.
		Sources: func(ctx context.Context, t gh.Trigger) ([]app.Source, error) {
			src := app.Source{Repo: t.Repo}
			if t.PullRequest {
				src.Ref = fmt.Sprintf("refs/pull/%d/head", t.Number)
			}
			return []app.Source{src}, nil
		},
	})
	if err != nil {
		return err
	}
	g.tracker, g.processor = tracker, processor
	// Every stored login's events feed is polled (it costs a 304 when
	// nothing changed), so their /agent comments work where the App is
	// not installed; the App's repositories are polled only for
	// controllers GitHub cannot reach. With a webhook too, the processor
	// makes sure a comment seen several ways runs once.
	popts := gh.PollerOptions{Feeds: storedLogins(svc), FeedClient: asUser, Cursors: store, Deliveries: store,
		Sink: processor, Label: cfg.GitHub.Label, Interval: cfg.GitHub.PollInterval, Logger: log}
	if popts.Interval <= 0 {
		popts.Interval = config.DefaultPollInterval
	}
	if g.app != nil && cfg.GitHub.PollInterval > 0 {
		popts.Clients, popts.Installations = g.app.InstallationClient, gh.AppInstallations(g.app)
	}
	if g.poller, err = gh.NewPoller(popts); err != nil {
		return err
	}
	if g.webhookSecret != "" {
		wh, err := gh.NewWebhook(gh.WebhookConfig{Secret: []byte(g.webhookSecret), Deliveries: store, Sink: processor, Logger: log})
		if err != nil {
			return err
		}
		g.webhook = wh
	}
	return nil
}

// storedLogins lists the logins of every stored GitHub account.
func storedLogins(svc *app.Service) func(ctx context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		list, err := svc.GitHubAccounts(app.WithActor(ctx, app.OperatorActor))
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		var out []string
		for _, a := range list {
			if k := strings.ToLower(a.Login); !seen[k] {
				seen[k] = true
				out = append(out, a.Login)
			}
		}
		return out, nil
	}
}

// run drives the processor, the tracker and the poller until ctx ends.
func (g *gitHub) run(ctx context.Context) error {
	loops := []func(context.Context) error{g.tracker.Run, g.processor.Run}
	if g.poller != nil {
		loops = append(loops, g.poller.Run)
	}
	done := make(chan error, len(loops))
	for _, loop := range loops {
		go func() { done <- loop(ctx) }()
	}
	var errs []error
	for range loops {
		if err := <-done; err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// manifestFlow serves GET /setup, which creates the App on GitHub and
// stores it sealed; the next start uses it.
func manifestFlow(cfg *config.Config, store app.Store, keys app.Secrets, log *slog.Logger) (*gh.ManifestFlow, error) {
	public := cfg.PublicURL
	if public == "" {
		public = "http://" + cfg.Addr
	}
	return gh.NewManifestFlow(gh.ManifestFlowOptions{
		Manifest: asb.AppManifest, PublicURL: public, WebURL: cfg.GitHub.WebURL, APIURL: cfg.GitHub.APIURL, Logger: log,
		Save: func(ctx context.Context, c app.GitHubAppCredentials) error {
			return app.SaveGitHubApp(ctx, store, keys, c)
		},
		Current: func(ctx context.Context) (app.GitHubAppCredentials, bool, error) {
			return app.LoadGitHubApp(ctx, store, keys)
		},
	})
}
