package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/cmd/asb/internal/config"
	gh "github.com/asb-dev/asb/github"
)

// doctorGitHub checks the App's credentials against GitHub itself, where
// it is installed, and how events reach asb (webhook or poller).
func doctorGitHub(ctx context.Context, r *doctorReport, cfg *config.Config, timeout time.Duration) {
	g := cfg.GitHub
	if g.AppID == 0 {
		r.warn("no GitHub App configured",
			"asb does not see /agent comments or agent labels; the dashboard, MCP and JSON routes still work",
			"create the App (docs/github-app.md; app-manifest.yml lists its permissions and events), then set GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY_FILE and GITHUB_WEBHOOK_SECRET")
		return
	}
	const noApp = "asb cannot act as the App: it neither sees comments nor clones and pushes"
	label := fmt.Sprintf("GitHub App %d", g.AppID)
	pem, err := os.ReadFile(g.PrivateKeyFile)
	if err != nil {
		r.fail(fmt.Sprintf("%s: private key %s cannot be read (%v)", label, g.PrivateKeyFile, pathError(err)), noApp,
			"set GITHUB_APP_PRIVATE_KEY_FILE to the .pem from the App's settings page (Private keys → Generate a private key), readable by "+whoami())
		return
	}
	ghApp, err := gh.NewApp(gh.AppConfig{AppID: g.AppID, PrivateKeyPEM: pem, APIURL: g.APIURL, WebURL: g.WebURL})
	if err != nil {
		r.fail(fmt.Sprintf("%s: %s is not a usable private key (%s)", label, g.PrivateKeyFile, app.ErrorMessage(err)), noApp,
			"download a new private key from the App's settings page and point GITHUB_APP_PRIVATE_KEY_FILE at the .pem as downloaded")
		return
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	a, _, err := ghApp.AppClient().Apps.Get(cctx, "")
	if err != nil {
		err = gh.APIError(err, "read the App")
		var ae *app.Error
		errors.As(err, &ae)
		switch {
		case ae != nil && ae.Code == app.EUNAUTHORIZED:
			r.fail(label+": GitHub refused the App's credentials", noApp+"; GITHUB_APP_ID and the key belong to different Apps, or the key was deleted",
				"check the App ID on the App's settings page (General → About), and generate a new private key there")
		case ae != nil && ae.Code == app.ERATELIMIT:
			r.warn(label+": "+ae.Message, "GitHub is rate limiting the App; runs wait and retry on their own", "wait for the limit to reset (docs/runbook.md, \"GitHub rate limits\")")
		default:
			r.fail(label+": "+app.ErrorMessage(err), noApp,
				"check that this machine reaches "+g.APIURL+" (proxy, firewall, DNS); for GitHub Enterprise set GITHUB_API_URL=https://HOST/api/v3/")
		}
		return
	}
	r.ok("GitHub App", fmt.Sprintf("%s (id %d): GitHub accepts its key", a.GetSlug(), g.AppID))
	insts, _, err := ghApp.AppClient().Apps.ListInstallations(cctx, nil)
	switch {
	case err != nil:
		r.warn(label+": cannot list its installations ("+app.ErrorMessage(gh.APIError(err, "list installations"))+")",
			"asb only works in repositories where the App is installed", "check again later; docs/runbook.md covers GitHub outages")
	case len(insts) == 0:
		r.warn(label+" is not installed on any account",
			"asb only sees and works in repositories where the App is installed",
			fmt.Sprintf("install it: %sapps/%s/installations/new", g.WebURL, a.GetSlug()))
	default:
		var who []string
		for _, in := range insts {
			who = append(who, in.GetAccount().GetLogin())
		}
		r.ok("GitHub App", "installed on "+strings.Join(who, ", "))
	}
	doctorDelivery(r, cfg)
}

// doctorDelivery says how comments and labels reach asb.
func doctorDelivery(r *doctorReport, cfg *config.Config) {
	g := cfg.GitHub
	hook := strings.TrimSuffix(cfg.PublicURL, "/") + "/webhooks/github"
	switch {
	case g.WebhookSecret.IsSet() && isLoopbackURL(cfg.PublicURL):
		r.warn("webhooks go to "+hook+", which GitHub cannot reach",
			"the receiver is on, but deliveries from github.com never arrive at a loopback address",
			"put a TLS reverse proxy in front and set ASB_PUBLIC_URL=https://your-host (and the App's webhook URL to …/webhooks/github), or set POLL_INTERVAL=60s to poll instead")
	case g.WebhookSecret.IsSet():
		r.ok("GitHub events", "webhook receiver on; the App's webhook URL must be "+hook)
	case g.PollInterval > 0:
		r.note("GitHub events", fmt.Sprintf("poll-only mode: no GITHUB_WEBHOOK_SECRET, so asb asks GitHub every %s (comments take up to that long to be seen)", g.PollInterval))
	default:
		r.fail("GitHub events: no GITHUB_WEBHOOK_SECRET and POLL_INTERVAL is off",
			"asb never sees /agent comments or agent labels",
			"set GITHUB_WEBHOOK_SECRET to the App's webhook secret, or POLL_INTERVAL=60s when GitHub cannot reach asb")
	}
}

func isLoopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	if u.Hostname() == "localhost" {
		return true
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
}

// pathError drops the path from an *os.PathError, which the caller names.
func pathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
