package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/dubbo-lab/dubbo/monitor/store"
)

// Statistics answers GET /api/v1/stats; *store.Store implements it.
type Statistics interface {
	Query(ctx context.Context, f store.Filter) ([]store.Row, error)
}

// HTTPOptions are what the monitor's HTTP server serves.
type HTTPOptions struct {
	// Stats answers GET /api/v1/stats?interface=&method=&side=&address=&from=&to=.
	Stats Statistics
	// Metrics answers GET /metrics (Prometheus text); nil: 404.
	Metrics http.Handler
	// Console serves every other path (the web console); nil: a short
	// text that names the API.
	Console http.Handler
	Logger  *slog.Logger
}

// Handler routes the monitor's HTTP API: GET /api/v1/stats and GET
// /metrics, and everything else to the console.
func Handler(o HTTPOptions) http.Handler {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/stats", func(w http.ResponseWriter, r *http.Request) {
		f, err := store.ParseFilter(r.URL.Query())
		if err != nil {
			writeJSON(w, http.StatusBadRequest, apiError{err.Error()})
			return
		}
		rows, err := o.Stats.Query(r.Context(), f)
		switch {
		case errors.Is(err, store.ErrBadQuery):
			writeJSON(w, http.StatusBadRequest, apiError{err.Error()})
		case err != nil:
			log.Error("GET /api/v1/stats", "err", err)
			writeJSON(w, http.StatusInternalServerError, apiError{err.Error()})
		default:
			if rows == nil {
				rows = []store.Row{}
			}
			writeJSON(w, http.StatusOK, rows)
		}
	})
	if o.Metrics != nil {
		mux.Handle("GET /metrics", o.Metrics)
	}
	console := o.Console
	if console == nil {
		console = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprint(w, "dubbo monitor\n\nGET /api/v1/stats?interface=&method=&side=provider|consumer&address=&from=&to=\nGET /metrics\n")
		})
	}
	mux.Handle("/", console)
	return mux
}

type apiError struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// httpServer is the monitor's HTTP server on console.listen.
type httpServer struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

func startHTTP(listen string, h http.Handler, log *slog.Logger) (*httpServer, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("monitor http: listen on %s: %w; set console.listen to a free address, or \"\" for none", listen, err)
	}
	s := &httpServer{ln: ln, done: make(chan struct{}),
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

func (s *httpServer) shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}
