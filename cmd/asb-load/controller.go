package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
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
	c.srv = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
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

// drained waits, at most until ctx ends, for the sink's consumer to
// process what the webhook handed it.
func (c *controller) drained(ctx context.Context) {
	for c.accepted.Load() < c.handed.Load() && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
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

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}

func defaultDB(dir string) string { return filepath.Join(dir, "asb-load.sqlite") }
