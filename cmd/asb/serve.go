package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/cmd/asb/internal/config"
	asbmcp "github.com/asb-dev/asb/mcp"
	"github.com/asb-dev/asb/sandbox"
	"github.com/asb-dev/asb/sandbox/workspace"
	"github.com/asb-dev/asb/web"
)

func runServe(ctx context.Context, env *environment, args []string) int {
	fs := newFlagSet(env, "serve", "Run the controller: the HTTP server (health, readiness, metrics) and the run scheduler.\nStops gracefully on SIGINT or SIGTERM; boxes keep running and are re-attached on the next start.")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	cfg, ok := commandConfig(env)
	if !ok {
		return 2
	}
	log := newLogger(cfg, env.stderr)
	for _, w := range cfg.Warnings {
		log.Warn("configuration", "warning", w)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	store, err := openStore(ctx, cfg)
	if err != nil {
		log.Error("cannot open the database", "path", dbPath(cfg), "err", err)
		return 1
	}
	defer store.Close()
	keys, keyFile, keyCreated, err := openKeyring(ctx, cfg, store, true)
	if err != nil {
		log.Error("cannot use the secrets key", "err", err)
		return 1
	}
	if keyCreated {
		log.Info("generated the secrets key; back it up with the database", "path", keyFile)
	}
	token, tokenFile, tokenCreated, err := operatorToken(cfg, true)
	if err != nil {
		log.Error("cannot set up the operator token", "err", err)
		return 1
	}
	if tokenCreated {
		// The path, once; never the token itself.
		log.Info("generated the operator token: it is your root credential; read it from this file", "path", tokenFile)
	}
	// Listening first makes the address known before anything builds a
	// link from it (tracking comments, the dashboard, the manifest).
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		log.Error("cannot listen", "addr", cfg.Addr, "err", err)
		return 1
	}
	defer ln.Close() // Serve closes it too; this covers an early return
	if strings.HasSuffix(cfg.PublicURL, ":0") {
		cfg.PublicURL = "http://" + ln.Addr().String() // port chosen by the system
	}

	hosts, err := openHosts(cfg, log)
	if err != nil {
		log.Error("cannot set up sandbox hosts", "err", err)
		return 1
	}
	defer closeHosts(hosts)
	// With hosts, readiness follows the fleet's probes; without, it names
	// the setting to add.
	hostsReady := func(context.Context) error {
		return errors.New("no sandbox host configured: set SANDBOX_HOSTS=local or ssh://user@host (see docs/configuration.md)")
	}
	hostsDraining := func(context.Context) error { return nil }
	var fleet *sandbox.Fleet
	if len(hosts) > 0 {
		fleet, err = newFleet(cfg, store, hosts, log.With("component", "sandbox"))
		if err != nil {
			log.Error("cannot set up sandbox hosts", "err", err)
			return 1
		}
		hostsReady, hostsDraining = fleetCheck(fleet), drainCheck(fleet)
	}
	var storedApp *app.GitHubAppCredentials
	if cfg.GitHub.AppID == 0 {
		c, ok, err := app.LoadGitHubApp(ctx, store, keys)
		if err != nil {
			log.Error("cannot read the GitHub App stored by /setup", "err", err)
			return 1
		}
		if ok {
			storedApp = &c
		}
	}
	ghs, err := newGitHub(ctx, cfg, storedApp, log.With("component", "github"))
	if err != nil {
		log.Error("cannot set up the GitHub App", "err", err)
		return 1
	}
	forge, fetch := ghs.forge, ghs.forge.Fetch
	var boxes app.Sandbox = unconfiguredSandbox{reason: "no sandbox host configured: set SANDBOX_HOSTS"}
	if fleet != nil {
		boxes = newSandbox(cfg, env, fleet, fetch, log.With("component", "sandbox"))
	}
	// Working trees uploaded by `asb mcp` wait here until a box holds them.
	workspaces, err := workspace.NewStore(filepath.Join(cfg.DataDir, "workspaces"), workspace.Options{
		Limits: workspace.Limits{MaxBytes: cfg.WorkspaceMaxBytes}, Logger: log.With("component", "workspaces")})
	if err != nil {
		log.Error("cannot set up the workspace folder", "err", err)
		return 1
	}
	svc := app.NewService(app.Deps{
		Store: store, Sandbox: boxes, Forge: forge, Workspaces: workspaces, Logger: log.With("component", "core"),
		Secrets: keys, GitHub: ghs.users, Passwords: web.ScryptHasher{},
	}, app.Config{WaitTimeout: cfg.Agent.WaitTimeout, AskTimeout: cfg.Agent.AskTimeout, Accounts: accountPolicy(cfg)})
	// One bearer check (operator token or personal API key) for the JSON routes and /mcp.
	bearer := web.NewBearerAuthenticator(svc, token)
	var webhook http.Handler
	if err := ghs.start(cfg, svc, store, log.With("component", "github")); err != nil {
		log.Error("cannot set up the GitHub surface", "err", err)
		return 1
	}
	if ghs.webhook != nil {
		webhook = ghs.webhook
	}

	var guidance []string
	for _, g := range cfg.Unconfigured() {
		// serve has just made sure an operator token exists.
		// An App created through /setup stands in for the App variables.
		if storedApp != nil && (strings.HasPrefix(g, "No GitHub App") || strings.HasPrefix(g, "No GITHUB_WEBHOOK_SECRET")) {
			continue
		}
		if !strings.HasPrefix(g, "No MCP_HTTP_TOKEN") {
			guidance = append(guidance, g)
		}
	}
	for _, g := range guidance {
		log.Warn("not configured yet", "what", g)
	}
	mcpHandler := asbmcp.NewHTTPHandler(
		asbmcp.NewServer(asbmcp.Options{Service: svc, WaitTimeout: cfg.Agent.WaitTimeout, Version: version, Logger: log.With("component", "mcp")}),
		bearer.Verify, asbmcp.HTTPOptions{Logger: log.With("component", "mcp")})
	// Closed at shutdown so live streams end instead of holding it up.
	stopStreams := make(chan struct{})
	setup, err := manifestFlow(cfg, store, keys, log.With("component", "github"))
	if err != nil {
		log.Error("cannot set up the GitHub App manifest flow", "err", err)
		return 1
	}
	handler := web.New(web.Options{
		Service: svc,
		Logger:  log.With("component", "http"),
		Checks: []web.Check{
			{Name: "database", Required: true, Err: store.Ping},
			{Name: "sandbox_hosts", Required: true, Err: hostsReady},
			{Name: "sandbox_drain", Err: hostsDraining},
			{Name: "github_app", Err: func(context.Context) error {
				if ghs.app == nil {
					return errors.New("no GitHub App configured: open /setup to create one on GitHub, or set GITHUB_APP_ID and GITHUB_APP_PRIVATE_KEY_FILE (see docs/github-app.md)")
				}
				return nil
			}},
		},
		Guidance:           guidance,
		Metrics:            web.NewMetrics(svc),
		OperatorToken:      token,
		Authenticator:      bearer,
		MultiUser:          cfg.Auth.Mode == config.ModeSaaS,
		GitHubOAuth:        githubOAuth(cfg),
		WaitTimeout:        cfg.Agent.WaitTimeout,
		MutationsPerMinute: cfg.Auth.MutationsPerMinute,
		StopStreams:        stopStreams,
		Webhook:            webhook,
		MCP:                mcpHandler,
		PublicURL:          cfg.PublicURL,
		RepoSuggestions:    newRepoSuggestions(svc, ghs.app, log.With("component", "github")).List,
		Setup:              setup.Start(),
		SetupCallback:      setup.Callback(),
		Boxes: func(ctx context.Context) (boxes []app.Box, err error) {
			err = store.View(ctx, func(tx app.Tx) error {
				boxes, err = tx.ListBoxes("")
				return err
			})
			return boxes, err
		},
	})

	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		// No WriteTimeout: live streams (SSE, MCP) stay open by design.
		ErrorLog: nil,
	}
	srv.RegisterOnShutdown(func() { close(stopStreams) })
	svcCtx, stopSvc := context.WithCancel(context.WithoutCancel(ctx))
	svcDone := make(chan error, 1)
	go func() { svcDone <- svc.Run(svcCtx) }()
	sweepDone := make(chan error, 1)
	go func() { sweepDone <- workspaces.Run(svcCtx) }()
	githubDone := make(chan error, 1)
	go func() { githubDone <- ghs.run(svcCtx) }()
	fleetDone := make(chan error, 1)
	if fleet != nil {
		// Probe, reconcile and keep the warm pool filled in the background.
		go func() { fleetDone <- fleet.Run(svcCtx) }()
	} else {
		fleetDone <- nil
	}
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Serve(ln) }()
	log.Info("asb is listening", "addr", ln.Addr().String(), "public_url", cfg.PublicURL, "data_dir", cfg.DataDir, "version", version)
	if env.ready != nil {
		env.ready <- ln.Addr().String()
	}

	code := 0
	select {
	case <-ctx.Done():
		log.Info("shutting down: finishing in-flight requests; boxes keep running")
	case err := <-srvDone:
		log.Error("HTTP server stopped", "err", err)
		code = 1
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("HTTP shutdown", "err", err)
	}
	stopSvc()
	if err := <-svcDone; err != nil {
		log.Error("scheduler", "err", err)
		code = 1
	}
	if err := <-sweepDone; err != nil {
		log.Error("workspace sweep", "err", err)
		code = 1
	}
	if err := <-githubDone; err != nil {
		log.Error("GitHub surface", "err", err)
		code = 1
	}
	if err := <-fleetDone; err != nil {
		log.Error("sandbox hosts", "err", err)
		code = 1
	}
	log.Info("stopped")
	return code
}
