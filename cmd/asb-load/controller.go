package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asb-dev/asb/app"
	"github.com/asb-dev/asb/app/apptest"
	"github.com/asb-dev/asb/app/sqlite"
	gh "github.com/asb-dev/asb/github"
	"github.com/asb-dev/asb/web"
)

// controller is asb's serving side as `asb serve` wires it, minus GitHub's
// API and real hosts: a Service on a real SQLite file, the real HTTP
// handler on loopback with its webhook receiver, and a scripted sandbox.
// It runs in a process of its own (controllerMain), so that its heap and
// goroutines are measured without the load driver's.
type controller struct {
	URL           string
	Token         string
	WebhookSecret []byte

	store   *sqlite.Store
	srv     *http.Server
	cancel  context.CancelFunc
	done    sync.WaitGroup
	release chan struct{}

	// What the webhook handed to its sink, and what the sink's consumer
	// has processed of it.
	handed, accepted, triggers atomic.Int64
}

type controllerConfig struct {
	DBPath       string
	Runs         int
	Records      int
	PollInterval time.Duration
}

// record is what the scripted agent prints, one line per poll: an
// assistant message of ordinary size.
const record = `{"type":"assistant","message":{"content":[{"type":"text","text":"Reading the code, running the tests, and writing the change the task asks for."}]}}`

func startController(cfg controllerConfig) (*controller, error) {
	store, err := sqlite.Open(context.Background(), cfg.DBPath)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", cfg.DBPath, err)
	}
	c := &controller{store: store, release: make(chan struct{}), Token: randomHex(16), WebhookSecret: []byte(randomHex(16))}

	// Every turn prints Records records, one per poll, and then keeps
	// running until the gate opens (see release), so the tool can measure
	// memory with every run active.
	records := make([]string, cfg.Records)
	for i := range records {
		records[i] = record
	}
	sb := apptest.NewFakeSandbox()
	sb.ScriptFor = func(app.Turn) apptest.Script {
		return apptest.Script{Records: records, AgentSessionID: "load", Hold: c.release,
			Result: &app.AgentResult{Summary: "done"}}
	}
	svc := app.NewService(app.Deps{Store: store, Sandbox: sb},
		app.Config{PollInterval: cfg.PollInterval, MaxActiveRuns: cfg.Runs})

	deliveries := make(chan gh.Delivery, 1024)
	hook, err := gh.NewWebhook(gh.WebhookConfig{Secret: c.WebhookSecret, Deliveries: store,
		Sink: gh.SinkFunc(func(ctx context.Context, d gh.Delivery) {
			select {
			case deliveries <- d:
				c.handed.Add(1)
			default: // a full queue loses nothing: the delivery is stored
			}
		})})
	if err != nil {
		store.Close()
		return nil, err
	}
	stopStreams := make(chan struct{})
	handler := web.New(web.Options{Service: svc, OperatorToken: c.Token, Webhook: hook, StopStreams: stopStreams,
		MutationsPerMinute: 4*cfg.Runs + 100, Logger: slog.New(slog.DiscardHandler)})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		store.Close()
		return nil, err
	}
	c.URL = "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	mux.Handle("/", handler)
	mux.Handle(debugPrefix, c.debug())
	c.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	c.srv.RegisterOnShutdown(func() { close(stopStreams) })

	ctx, cancel := context.WithCancel(app.WithActor(context.Background(), app.OperatorActor))
	c.cancel = cancel
	c.done.Add(3)
	go func() { defer c.done.Done(); _ = svc.Run(ctx) }()
	go func() {
		defer c.done.Done()
		if err := c.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("serve", "err", err)
		}
	}()
	// The sink's consumer, like the processor: classify each delivery and
	// mark it handled.
	go func() {
		defer c.done.Done()
		for {
			select {
			case d := <-deliveries:
				c.accepted.Add(1)
				if _, ok, _ := gh.Classify(d.Event, d.Payload, gh.TriggerConfig{}); ok {
					c.triggers.Add(1)
				}
				_ = store.MarkDeliveryProcessed(ctx, d.ID, time.Now(), "")
			case <-ctx.Done():
				return
			}
		}
	}()
	return c, nil
}

// openGate lets every held run finish.
func (c *controller) openGate() {
	select {
	case <-c.release:
	default:
		close(c.release)
	}
}

func (c *controller) stop() error {
	c.openGate()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := c.srv.Shutdown(ctx)
	c.cancel()
	c.done.Wait()
	return errors.Join(err, c.store.Close())
}

// debugPrefix is where the controller process answers the load driver:
// samples of its own heap and goroutines, the gate, the sink's counters.
const debugPrefix = "/debug/load/"

func (c *controller) debug() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+debugPrefix+"sample", func(w http.ResponseWriter, r *http.Request) {
		writeDebug(w, take())
	})
	mux.HandleFunc("POST "+debugPrefix+"gate", func(w http.ResponseWriter, r *http.Request) {
		c.openGate()
		writeDebug(w, struct{}{})
	})
	mux.HandleFunc("GET "+debugPrefix+"sink", func(w http.ResponseWriter, r *http.Request) {
		writeDebug(w, sinkCounts{Handed: c.handed.Load(), Accepted: c.accepted.Load(), Triggers: c.triggers.Load()})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if subtle.ConstantTimeCompare([]byte(got), []byte(c.Token)) != 1 {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// sinkCounts are what the webhook handed its sink and what was processed.
type sinkCounts struct {
	Handed, Accepted, Triggers int64
}

func writeDebug(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// hello is the controller process's first line on stdout: where it
// listens and its credentials, which never travel in argv.
type hello struct {
	URL           string `json:"url"`
	Token         string `json:"token"`
	WebhookSecret string `json:"webhook_secret"`
}

// Environment of the controller process (nothing secret).
const (
	envRole    = "ASB_LOAD_ROLE"
	envDB      = "ASB_LOAD_DB"
	envRuns    = "ASB_LOAD_RUNS"
	envRecords = "ASB_LOAD_RECORDS"
	envPoll    = "ASB_LOAD_POLL"
)

// controllerMain is the controller process: it serves until its stdin
// closes (the driver is done, or gone).
func controllerMain() int {
	runs, err1 := strconv.Atoi(os.Getenv(envRuns))
	records, err2 := strconv.Atoi(os.Getenv(envRecords))
	poll, err3 := time.ParseDuration(os.Getenv(envPoll))
	if err := errors.Join(err1, err2, err3); err != nil {
		fmt.Fprintln(os.Stderr, "asb-load controller: bad configuration:", err)
		return 2
	}
	c, err := startController(controllerConfig{DBPath: os.Getenv(envDB), Runs: runs, Records: records, PollInterval: poll})
	if err != nil {
		fmt.Fprintln(os.Stderr, "asb-load controller:", err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(hello{URL: c.URL, Token: c.Token, WebhookSecret: string(c.WebhookSecret)}); err != nil {
		c.stop()
		return 1
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := c.stop(); err != nil {
		fmt.Fprintln(os.Stderr, "asb-load controller: stop:", err)
		return 1
	}
	return 0
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}
