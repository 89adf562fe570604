package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/need"
)

// prometheusBin is Debian's Prometheus server (package prometheus).
const prometheusBin = "/usr/bin/prometheus"

// prometheus is a real Prometheus server scraping the test's processes
// every 500 ms, with its data in a temporary directory.
type prometheus struct {
	addr string
}

// startPrometheus starts Prometheus on a free loopback port scraping the
// targets (host:port, path /metrics). Without it the test is skipped, or
// fails when CI=true.
func startPrometheus(t *testing.T, targets ...string) *prometheus {
	t.Helper()
	if _, err := os.Stat(prometheusBin); err != nil {
		need.Missing(t, "Prometheus not installed (%s missing): apt-get install prometheus", prometheusBin)
	}
	dir := t.TempDir()
	var list string
	for i, tg := range targets {
		if i > 0 {
			list += ", "
		}
		list += strconv.Quote(tg)
	}
	cfg := fmt.Sprintf("global:\n  scrape_interval: 500ms\n  scrape_timeout: 400ms\nscrape_configs:\n  - job_name: dubbo\n    static_configs:\n      - targets: [%s]\n", list)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(prometheusBin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Dir = dir
	n := startCmd(t, "prometheus", cmd)
	p := &prometheus{addr: addr}
	if _, ok := waitFor(30*time.Second, func() bool {
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err != nil {
			return n.exited()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK || n.exited()
	}); !ok || n.exited() {
		t.Fatalf("prometheus did not become ready on %s", addr)
	}
	return p
}

// query evaluates a PromQL expression that yields one sample; ok is false
// when it yields none.
func (p *prometheus) query(expr string) (v float64, ok bool, err error) {
	resp, err := http.Get("http://" + p.addr + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return 0, false, err
	}
	if body.Status != "success" {
		return 0, false, fmt.Errorf("query %s: %s", expr, body.Error)
	}
	if len(body.Data.Result) != 1 {
		return 0, false, nil
	}
	s, _ := body.Data.Result[0].Value[1].(string)
	v, err = strconv.ParseFloat(s, 64)
	return v, err == nil, err
}
