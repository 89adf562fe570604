// Package console is the web console, and the one owner of the HTTP URL
// space on console.listen: its HTML pages, the JSON API under /api/v1
// (the registry's services, applications, providers, consumers, rules and
// raw tree; the monitor's statistics and the traffic pages' figures; rule
// editing and test calls) and GET /metrics.
//
// The traffic pages read the monitor's store through store.Summary and
// store.Series: the overview ranks the services by their calls of the
// last five complete minutes (stats.go), the services list shows and
// sorts by them, the service page has a service's calls per method, per
// provider and per consumer and its charts over any window (window.go,
// traffic.go), /instances puts the registry's processes beside what each
// reported (instances.go), and /dependencies draws who calls whom
// (dependencies.go, drawn by package depmap). A service's calls are its
// consumers' reports where there are some (they count the calls that
// found no provider), else its providers'. Every response, a page, an API answer or an error, has the
// same security headers (security.go) and, outside the pages, the same
// error shape, {"error": {"kind", "message"}}, with the kinds of errors.go.
//
// Governance: rules are listed, filtered and edited as YAML (Dubbo Admin's
// formats, old and new, kept whole by package rules), and through forms
// that each edit one part of a rule beside its YAML (forms.go); every
// change is recorded with who made it, and a rule's history restores an
// earlier version (changes.go). Providers registered at application level
// only are listed from their instances' metadata (applevel.go); the test
// page calls a method as dubbo call does (testcall.go).
//
// It is served by echo with html/template pages; its CSS and its one small
// script (which refreshes the figures of a page and keeps a form and its
// YAML in step) are embedded, so it works offline. Pages call the same
// functions as the API (/api/v1/...), so what a page shows is what the API
// answers; each page reads a typed view (pages.go), and the templates are
// checked when New builds them.
//
// The monitor role (package roles) serves it: the monitor stores the
// statistics, and hands the console its store (Options.Stats, and
// Options.Audit for the rules' history) and the process's metrics
// (Options.Metrics):
//
//	c, err := console.New(ctx, console.Options{
//		Listen:    cfg.Console.Listen,    // default 127.0.0.1:8080
//		Token:     cfg.Console.Token,     // required when Listen is not loopback
//		ReadToken: cfg.Console.ReadToken, // optional: reads only
//		Registry:  cfg.Registry.Address,  // zookeeper://..., or "": the statistics API only
//		Stats:     st,                    // *store.Store, or nil: no charts
//		Audit:     st,                    // *store.Store, or nil: no rule history
//		Metrics:   gatherer,              // what GET /metrics exports
//	})
//	if err != nil { ... }
//	if err := c.Start(); err != nil { ... }
//	log.Info("console", "url", c.URL())
//	...
//	c.Shutdown(ctx)
//
// Without a registry (Registry "") there is nothing for the pages to show:
// the console then serves the statistics (GET /api/v1/stats, /api/v1/series
// and /api/v1/traffic) and GET /metrics only, under the same rules.
//
// With a registry the console opens two ZooKeeper sessions of its own: the
// catalog's, which watches the registry so that pages read memory (package
// catalog), and a registry client that writes rules, reads service
// definitions and carries the console's consumer for test calls.
//
// Security: the console listens on loopback by default. On any other
// address New refuses to start without a token, whatever it serves, and
// every request then needs it (or the read-only token, which reads and
// changes nothing), as "Authorization: Bearer <token>" or the cookie the
// login form sets; on loopback a token, when set, guards changes (PUT,
// POST, DELETE) only. Forms carry a CSRF token; changing requests from
// another origin, or with a simple-form content type and no CSRF token,
// are refused; every response has a Content-Security-Policy that allows
// nothing from outside the console.
package console

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/dubbo-lab/dubbo/console/catalog"
	"github.com/dubbo-lab/dubbo/console/rules"
	"github.com/dubbo-lab/dubbo/monitor/store"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/gateway"
	"github.com/dubbo-lab/dubbo/node/registry/metadata"
	"github.com/dubbo-lab/dubbo/node/registry/zookeeper"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// DefaultListen is console.listen's default.
const DefaultListen = "127.0.0.1:8080"

// Stats is what the console reads from the monitor's store; *store.Store
// implements it.
type Stats interface {
	Query(ctx context.Context, f store.Filter) ([]store.Row, error)
	Series(ctx context.Context, q store.SeriesQuery) ([]store.Bucket, error)
	Summary(ctx context.Context, q store.SummaryQuery) (store.Summary, error)
	// RawRetention is how long rows are kept as reported: the charts of
	// older times are drawn per hour (windowOf).
	RawRetention() time.Duration
}

// Audit is where the console records rule changes and reads them back;
// *store.Store implements it.
type Audit interface {
	RecordChange(ctx context.Context, c store.Change) (int64, error)
	Changes(ctx context.Context, kind, key string, limit int) ([]store.Change, error)
	ChangeByID(ctx context.Context, id int64) (store.Change, error)
}

// Caller makes the console's test calls and reads what application-level
// instances serve; *consumer.Consumer implements it.
type Caller interface {
	rpc.Invoker
	ParamTypes(ctx context.Context, iface, version, group, method string, argc int) ([]string, error)
	ProtoService(ctx context.Context, iface, version, group string) (protoreflect.ServiceDescriptor, error)
	InstanceProviders(ctx context.Context, in *metadata.Instance) ([]*url.URL, error)
}

// consoleApplication is the application name of the console's consumers.
const consoleApplication = "dubbo-console"

// RuleStore is the config center and metadata report the console writes
// rules to and reads method signatures from; *zookeeper.Registry
// implements it.
type RuleStore interface {
	GetConfig(ctx context.Context, key string) (content string, ok bool, err error)
	PublishConfig(ctx context.Context, key, content string) error
	DeleteConfig(ctx context.Context, key string) error
	GetServiceDefinition(ctx context.Context, iface, version, group string) (*metadata.ServiceDefinition, error)
}

// Options configure a Console.
type Options struct {
	// Listen is host:port; default DefaultListen. Port 0 picks a free port.
	Listen string
	// Token is required for changes when set; New refuses a non-loopback
	// Listen without it, and there it is needed to read too. Default "".
	Token string
	// ReadToken, when set, lets its holder read (a dashboard screen) but
	// change nothing; it needs Token, and must differ from it. Default "".
	ReadToken string
	// Registry is the registry URL (zookeeper://host:port[,host:port]).
	// Default "": no pages, and of the API only the statistics
	// (/api/v1/stats, /api/v1/series, /api/v1/traffic) and /metrics.
	Registry string
	// Stats are the monitor's statistics; nil: pages say there are none
	// and /api/v1/stats, /api/v1/series and /api/v1/traffic answer 503.
	Stats Stats
	// Audit keeps every change of a rule, for its history and restore
	// (*store.Store); nil: changes are not recorded and rules have no
	// history.
	Audit Audit
	// Caller makes test calls; default: a consumer of the console's own
	// (application dubbo-console) on Registry. Unused without Registry.
	Caller Caller
	// Metrics is what GET /metrics exports; default: the console's own
	// registry with the Go and process collectors.
	Metrics prometheus.Gatherer
	// Refresh is how often pages refresh their figures, and how long one
	// reading of every service's calls of the last five minutes serves
	// the overview and the services list; default 5s.
	Refresh time.Duration
	// Logger; default slog.Default().
	Logger *slog.Logger
	// Now is the clock of the charts; default time.Now.
	Now func() time.Time
}

// Console is the web console. Create it with New, then Start; stop it
// with Shutdown.
type Console struct {
	opts  Options
	log   *slog.Logger
	cat   *catalog.Catalog
	rules RuleStore
	call  Caller
	echo  *echo.Echo
	pages *pages
	gw    *gateway.Server

	csrfKey []byte // signs CSRF tokens
	// open is true when the console listens beyond loopback: reading
	// needs a token then.
	open   bool
	recent recentCache

	closers []func() error
	http    *http.Server
	ln      net.Listener
	done    chan struct{}
}

// New checks the options, connects to the registry (when there is one)
// and builds the routes. It refuses a Listen address other than loopback
// without a Token.
func New(ctx context.Context, opts Options) (*Console, error) {
	if opts.Listen == "" {
		opts.Listen = DefaultListen
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Refresh <= 0 {
		opts.Refresh = 5 * time.Second
	}
	if opts.Metrics == nil {
		pr := prometheus.NewRegistry()
		pr.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		opts.Metrics = pr
	}
	loop, err := isLoopback(opts.Listen)
	if err != nil {
		return nil, err
	}
	// One rule for the whole URL space: the statistics and metrics alone
	// are no reason to open it to the network without a token.
	if !loop && opts.Token == "" {
		return nil, fmt.Errorf("console: listen address %s is not loopback: set console.token (every change then needs it), or listen on 127.0.0.1", opts.Listen)
	}
	switch {
	case opts.ReadToken != "" && opts.Token == "":
		return nil, errors.New("console: console.read-token is set without console.token: set console.token too (changes need it), or drop the read token")
	case opts.ReadToken != "" && opts.ReadToken == opts.Token:
		return nil, errors.New("console: console.read-token is console.token: give the read-only token a value of its own")
	}
	c := &Console{opts: opts, log: opts.Logger.With("component", "console"), csrfKey: make([]byte, 32), open: !loop}
	if _, err := rand.Read(c.csrfKey); err != nil {
		return nil, fmt.Errorf("console: random key: %w", err)
	}
	if opts.Registry == "" {
		c.routes()
		return c, nil
	}
	ok := false
	defer func() {
		if !ok {
			c.closeAll()
		}
	}()
	c.cat, err = catalog.New(opts.Registry, catalog.Options{Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	c.closers = append(c.closers, func() error { c.cat.Close(); return nil })
	reg, err := zookeeper.Open(ctx, opts.Registry, 0, zookeeper.Options{Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	c.closers = append(c.closers, reg.Close)
	c.rules = reg
	c.call = opts.Caller
	if c.call == nil {
		check := false
		cons, err := consumer.New(ctx, consumer.Config{Application: consoleApplication, Registry: opts.Registry,
			Defaults: consumer.Settings{Check: &check}}, consumer.Options{Registry: reg, Logger: opts.Logger})
		if err != nil {
			return nil, fmt.Errorf("console: consumer for test calls: %w", err)
		}
		c.closers = append(c.closers, cons.Close)
		c.call = ownCaller{cons}
	}
	// The console's own guard (token, CSRF, origin) covers test calls.
	c.gw = gateway.New(gateway.Options{Invoker: c.call, Types: c.call, Logger: opts.Logger, Mounted: true})
	if c.pages, err = newPages(templateFS); err != nil {
		return nil, err
	}
	c.routes()
	ok = true
	return c, nil
}

// hasPages reports whether the console has a registry to show: without
// one it serves the statistics API and /metrics only.
func (c *Console) hasPages() bool { return c.cat != nil }

// isLoopback reports whether listen's host is a loopback address.
func isLoopback(listen string) (bool, error) {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false, fmt.Errorf("console: listen address %q: want host:port", listen)
	}
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// Handler serves the console without a listener (tests, benchmarks).
func (c *Console) Handler() http.Handler { return c.echo }

// Catalog is the console's live copy of the registry; nil without one.
func (c *Console) Catalog() *catalog.Catalog { return c.cat }

// Start listens on Options.Listen and serves in a goroutine.
func (c *Console) Start() error {
	if c.ln != nil {
		return errors.New("console: already started")
	}
	ln, err := net.Listen("tcp", c.opts.Listen)
	if err != nil {
		return fmt.Errorf("console: listen on %s: %w", c.opts.Listen, err)
	}
	c.ln = ln
	c.http = &http.Server{Handler: c.echo, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	c.done = make(chan struct{})
	go func() {
		defer close(c.done)
		if err := c.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			c.log.Error("console stopped serving", "err", err)
		}
	}()
	return nil
}

// Addr is the address Start listens on ("" before Start).
func (c *Console) Addr() string {
	if c.ln == nil {
		return ""
	}
	return c.ln.Addr().String()
}

// URL is the console's address as a browser link.
func (c *Console) URL() string { return "http://" + c.Addr() + "/" }

// Shutdown stops serving (waiting for requests in flight until ctx ends)
// and closes the console's registry sessions and consumer.
func (c *Console) Shutdown(ctx context.Context) error {
	var err error
	if c.http != nil {
		err = c.http.Shutdown(ctx)
		<-c.done
	}
	return errors.Join(err, c.closeAll())
}

func (c *Console) closeAll() error {
	var errs []error
	for i := len(c.closers) - 1; i >= 0; i-- {
		errs = append(errs, c.closers[i]())
	}
	c.closers = nil
	return errors.Join(errs...)
}

// routes lists every page and API endpoint: the whole URL space.
func (c *Console) routes() {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = c.handleError
	e.Use(c.secureHeaders, c.guard)

	api := e.Group("/api/v1")
	api.GET("/stats", c.apiStats)
	api.GET("/series", c.apiSeries)
	api.GET("/traffic", c.apiTraffic)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(c.opts.Metrics, promhttp.HandlerOpts{})))
	c.echo = e
	if !c.hasPages() {
		e.GET("/", c.apiIndex)
		return
	}

	api.GET("/overview", c.apiOverview)
	api.GET("/services", c.apiServices)
	api.GET("/services/:interface", c.apiService)
	api.GET("/services/:interface/providers", c.apiProviders)
	api.GET("/services/:interface/consumers", c.apiConsumers)
	api.GET("/services/:interface/methods", c.apiMethods)
	api.GET("/services/:interface/rules", c.apiServiceRules)
	api.PUT("/services/:interface/providers/:address/weight", c.apiProviderWeight)
	api.PUT("/services/:interface/providers/:address/enabled", c.apiProviderEnabled)
	api.GET("/instances", c.apiInstances)
	api.GET("/dependencies", c.apiDependencies)
	api.GET("/applications", c.apiApplications)
	api.GET("/applications/:name", c.apiApplication)
	api.GET("/rules", c.apiRules)
	for _, kind := range rules.Kinds {
		param := ":key"
		if kind == rules.KindTag {
			param = ":application"
		}
		api.GET("/rules/"+kind+"/"+param, c.apiGetRule(kind))
		api.PUT("/rules/"+kind+"/"+param, c.apiPutRule(kind))
		api.DELETE("/rules/"+kind+"/"+param, c.apiDeleteRule(kind))
		api.PUT("/rules/"+kind+"/"+param+"/enabled", c.apiRuleEnabled(kind))
		api.GET("/rules/"+kind+"/"+param+"/history", c.apiRuleHistory(kind))
		api.POST("/rules/"+kind+"/"+param+"/history/:id/restore", c.apiRestoreRule(kind))
	}
	api.POST("/invoke/:interface/:method", c.apiInvoke)
	api.GET("/registry/tree", c.apiTree)

	e.GET("/", c.pageOverview)
	e.GET("/services", c.pageServices)
	e.GET("/services/:interface", c.pageService)
	e.GET("/services/:interface/test", c.pageTest)
	e.POST("/services/:interface/test", c.formTest)
	e.POST("/services/:interface/providers/:address", c.formProvider)
	e.GET("/instances", c.pageInstances)
	e.GET("/dependencies", c.pageDependencies)
	e.GET("/applications", c.pageApplications)
	e.GET("/applications/:name", c.pageApplication)
	e.GET("/rules", c.pageRules)
	e.GET("/rules/new", c.pageRuleEdit)
	e.GET("/rules/:kind/:key", c.pageRuleEdit)
	e.POST("/rules/:kind/:key", c.formRule)
	e.POST("/rules", c.formRule)
	e.GET("/forms/:form", c.pageForm)
	e.POST("/forms/:form", c.formPost)
	e.GET("/registry", c.pageRegistry)
	e.GET("/login", c.pageLogin)
	e.POST("/login", c.formLogin)
	e.POST("/logout", c.formLogout)
	e.GET("/static/*", echo.WrapHandler(http.StripPrefix("/static/", http.FileServer(http.FS(staticFS)))))
}
