package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/cmd/asb/internal/config"
	gh "github.com/asb-dev/asb/github"
	"github.com/asb-dev/asb/web"
)

// accountPolicy is the multi-user policy of AUTH_MODE=saas; one operator
// has no sign-up, trials or per-user quota.
func accountPolicy(cfg *config.Config) app.AccountPolicy {
	if cfg.Auth.Mode != config.ModeSaaS {
		return app.AccountPolicy{}
	}
	return app.AccountPolicy{
		SignupOpen:        cfg.Auth.Signup == "open",
		TrialDays:         cfg.Auth.TrialDays,
		UserMaxBoxes:      cfg.Auth.UserMaxBoxes,
		BillingURL:        cfg.Auth.BillingURL,
		AdminGitHubLogins: cfg.Auth.AdminGitHubLogins,
	}
}

// githubOAuth is "Continue with GitHub" when multi-user mode has an OAuth App.
func githubOAuth(cfg *config.Config) web.GitHubOAuth {
	if cfg.Auth.Mode != config.ModeSaaS || cfg.GitHub.OAuthClientID == "" {
		return nil
	}
	return gh.OAuth{ClientID: cfg.GitHub.OAuthClientID, ClientSecret: cfg.GitHub.OAuthClientSecret.Reveal(), WebURL: cfg.GitHub.WebURL}
}

const userUsage = `usage:
  asb user add USERNAME [--admin] [--email E] [--github LOGIN]   add a user and print their one-time invite
  asb user token USERNAME                                         issue a new one-time invite (earlier ones stop working)
  asb user plan USERNAME pro|free|extend [DAYS]                   set the plan, or extend the trial (default 7 days)
  asb user list                                                   list users

Acts on the database directly, as the operator. An invite is printed once:
the user pastes it at the sign-in page and then sets a password.`

func runUser(ctx context.Context, env *environment, args []string) int {
	fs := newFlagSet(env, "user", "Manage users of a multi-user (AUTH_MODE=saas) controller, as the operator.\n\n"+userUsage)
	admin := fs.Bool("admin", false, "add: make the user an admin")
	email := fs.String("email", "", "add: the user's email address")
	github := fs.String("github", "", "add: the user's GitHub login (their /agent comments then run as them)")
	// Flags may follow the positional arguments.
	var pos []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(pos) == 0 {
		fmt.Fprintln(env.stderr, userUsage)
		return 2
	}
	cfg, ok := commandConfig(env)
	if !ok {
		return 2
	}
	store, err := openStore(ctx, cfg)
	if err != nil {
		fmt.Fprintln(env.stderr, "asb user:", err)
		return 1
	}
	defer store.Close()
	svc := app.NewService(app.Deps{Store: store}, app.Config{Accounts: accountPolicy(cfg)})
	op := app.WithActor(ctx, app.OperatorActor)
	fail := func(err error) int {
		fmt.Fprintln(env.stderr, "asb user:", app.ErrorMessage(err))
		return 1
	}
	need := func(n int) bool {
		if len(pos) != n {
			fmt.Fprintln(env.stderr, userUsage)
			return false
		}
		return true
	}
	switch pos[0] {
	case "add":
		if !need(2) {
			return 2
		}
		acct, err := svc.CreateAccount(op, app.NewAccount{Username: pos[1], Email: *email, GitHubLogin: *github, Admin: *admin})
		if err != nil {
			return fail(err)
		}
		tok, err := svc.InviteToken(op, acct.ID)
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(env.stdout, "added %s%s\ninvite (shown once, valid 7 days): %s\n", acct.Username, adminNote(acct), tok)
	case "token":
		if !need(2) {
			return 2
		}
		acct, err := svc.FindAccount(op, pos[1])
		if err != nil {
			return fail(err)
		}
		tok, err := svc.InviteToken(op, acct.ID)
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(env.stdout, "invite for %s (shown once, valid 7 days): %s\n", acct.Username, tok)
	case "plan":
		if len(pos) != 3 && len(pos) != 4 {
			fmt.Fprintln(env.stderr, userUsage)
			return 2
		}
		acct, err := svc.FindAccount(op, pos[1])
		if err != nil {
			return fail(err)
		}
		var c app.AccountChange
		pro, free := app.PlanPro, ""
		switch pos[2] {
		case "pro":
			c.Plan = &pro
		case "free":
			c.Plan = &free
		case "extend":
			c.ExtendTrialDays = 7
			if len(pos) == 4 {
				if c.ExtendTrialDays, err = strconv.Atoi(pos[3]); err != nil || c.ExtendTrialDays < 1 {
					fmt.Fprintln(env.stderr, "asb user: DAYS is a whole number of days, at least 1")
					return 2
				}
			}
		default:
			fmt.Fprintln(env.stderr, userUsage)
			return 2
		}
		acct, err = svc.ChangeAccount(op, acct.ID, c)
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(env.stdout, "%s: %s\n", acct.Username, acct.Trial(app.SystemClock{}.Now()))
	case "list":
		list, err := svc.Accounts(op)
		if err != nil {
			return fail(err)
		}
		now := app.SystemClock{}.Now()
		for _, a := range list {
			state := ""
			if a.Disabled {
				state = " (disabled)"
			}
			fmt.Fprintf(env.stdout, "%-32s %-24s%s%s\n", a.Username, a.Trial(now), adminNote(a), state)
		}
	default:
		fmt.Fprintln(env.stderr, userUsage)
		return 2
	}
	return 0
}

func adminNote(a app.Account) string {
	if a.Admin {
		return " (admin)"
	}
	return ""
}
