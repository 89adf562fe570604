package embeddedzk

import (
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

func flw(t *testing.T, s *Server, word string) string {
	t.Helper()
	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.Write([]byte(word))
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(nc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFourLetterWords(t *testing.T) {
	s := testServer(t, func(c *Config) { c.FourLetterWhitelist = []string{"*"} })
	c, _ := dial(t, s, 5*time.Second)
	c.Create("/x", nil, 0, zk.WorldACL(zk.PermAll))
	c.GetW("/x")
	c.ChildrenW("/")
	if got := flw(t, s, "ruok"); got != "imok" {
		t.Fatalf("ruok = %q", got)
	}
	if got := flw(t, s, "isro"); got != "rw" {
		t.Fatalf("isro = %q", got)
	}
	addr := s.Addr().String()
	stats, ok := zk.FLWSrvr([]string{addr}, 5*time.Second)
	if !ok || stats[0].Mode != zk.ModeStandalone || stats[0].NodeCount != 5 || stats[0].Connections != 1 {
		t.Fatalf("FLWSrvr: %+v ok=%v", stats[0], ok)
	}
	cons, ok := zk.FLWCons([]string{addr}, 5*time.Second)
	if !ok || len(cons[0].Clients) != 1 || cons[0].Clients[0].SessionID != c.SessionID() {
		t.Fatalf("FLWCons: %+v ok=%v", cons[0], ok)
	}
	if ok := zk.FLWRuok([]string{addr}, 5*time.Second); !ok[0] {
		t.Fatal("FLWRuok")
	}
	if got := flw(t, s, "wchs"); got != "1 connections watching 2 paths\nTotal watches:2\n" {
		t.Fatalf("wchs = %q", got)
	}
	mntr := flw(t, s, "mntr")
	for _, want := range []string{"zk_version\t3.8.0-embedded", "zk_server_state\tstandalone", "zk_znode_count\t5\n", "zk_watch_count\t2\n"} {
		if !strings.Contains(mntr, want) {
			t.Errorf("mntr lacks %q:\n%s", want, mntr)
		}
	}
	stat := flw(t, s, "stat")
	if !strings.HasPrefix(stat, "Zookeeper version: 3.8.0-embedded, built on 01/01/2024 00:00 GMT\nClients:\n /127.0.0.1:") ||
		!strings.Contains(stat, "\n\nLatency min/avg/max: ") || !strings.HasSuffix(stat, "Mode: standalone\nNode count: 5\n") {
		t.Fatalf("stat:\n%s", stat)
	}
	for _, w := range []string{"conf", "envi", "dump", "wchc", "wchp", "dirs", "srst", "crst"} {
		if out := flw(t, s, w); out == "" {
			t.Errorf("%s answered nothing", w)
		}
	}
	if !strings.Contains(flw(t, s, "conf"), "tickTime=50\n") {
		t.Error("conf lacks tickTime")
	}
}

// TestFourLetterWhitelist checks which words each whitelist enables, and
// what a word left out answers.
func TestFourLetterWhitelist(t *testing.T) {
	tests := []struct {
		name    string
		list    []string
		on, off []string
	}{
		{"default", nil, []string{"srvr", "ruok"}, []string{"dump", "envi", "conf", "cons", "wchc", "crst", "srst", "stat", "mntr", "isro"}},
		// stmk is left out only because it waits for 8 more bytes.
		{"all", []string{"*"}, slices.DeleteFunc(slices.Clone(fourLetterWords), func(w string) bool { return w == "stmk" }), nil},
		{"spaces as in zoo.cfg", []string{" mntr", "dump "}, []string{"srvr", "mntr", "dump"}, []string{"ruok", "envi"}},
		{"empty leaves srvr", []string{}, []string{"srvr"}, []string{"ruok", "dump"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testServer(t, func(c *Config) { c.FourLetterWhitelist = tt.list })
			for _, w := range tt.on {
				if out := flw(t, s, w); strings.Contains(out, "whitelist") {
					t.Errorf("%s = %q, want it answered", w, out)
				}
			}
			for _, w := range tt.off {
				if out, want := flw(t, s, w), w+" is not executed because it is not in the whitelist.\n"; out != want {
					t.Errorf("%s = %q, want %q", w, out, want)
				}
			}
		})
	}
	if err := (Config{FourLetterWhitelist: []string{"ruok", "kill"}}).Validate(); err == nil || !strings.Contains(err.Error(), `"kill"`) {
		t.Errorf("Validate with an unknown word = %v, want an error naming it", err)
	}
}
