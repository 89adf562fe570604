package embeddedzk

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
)

// Version is what `srvr` and `mntr` report. The old date form keeps
// go-zookeeper's FLWSrvr parser working.
const (
	Version   = "3.8.0-embedded"
	buildDate = "01/01/2024 00:00 GMT"
)

// fourLetterWords are the words Apache ZooKeeper 3.8 knows; read-only.
var fourLetterWords = []string{
	"conf", "cons", "crst", "dirs", "dump", "envi", "gtmk", "ruok", "stmk",
	"srst", "srvr", "stat", "wchc", "wchp", "wchs", "mntr", "isro", "hash",
}

func isFourLetterWord(w string) bool { return slices.Contains(fourLetterWords, w) }

// notServingWords are the answers while the server cannot serve, as
// Apache's commands give them when its server is not running; "-" marks
// words answered as usual. ruok answers nothing, so it never says imok.
var notServingWords = map[string]string{
	"ruok": "", "isro": "null",
	"srvr": zkNotServing, "stat": zkNotServing, "mntr": zkNotServing, "cons": zkNotServing,
	"dump": zkNotServing, "wchs": zkNotServing, "wchc": zkNotServing, "wchp": zkNotServing,
	"dirs": zkNotServing, "crst": zkNotServing, "srst": zkNotServing,
	"conf": "-", "envi": "-", "gtmk": "-", "stmk": "-", "hash": "-",
}

const zkNotServing = "This ZooKeeper instance is not currently serving requests\n"

// fourLetter answers a four-letter word in plain text; the caller closes.
func (c *conn) fourLetter(word string) {
	var b strings.Builder
	switch {
	case c.s.words[word] && c.s.notServing() != nil && notServingWords[word] != "-":
		b.WriteString(notServingWords[word])
	case c.s.words[word]:
		c.s.answerWord(&b, c, word)
	default:
		// Apache's answer, word for word, so scripts see the same thing.
		fmt.Fprintf(&b, "%s is not executed because it is not in the whitelist.\n", word)
	}
	c.nc.SetWriteDeadline(time.Now().Add(handshakeTimeout))
	c.nc.Write([]byte(b.String()))
}

// answerWord writes the answer to an enabled four-letter word.
func (s *Server) answerWord(b *strings.Builder, c *conn, word string) {
	if word == "stmk" {
		var mask [8]byte
		c.nc.Read(mask[:]) // the new trace mask; we keep none
	}
	switch word {
	case "ruok":
		b.WriteString("imok")
	case "isro":
		b.WriteString("rw")
	case "srvr":
		s.writeSrvr(b, false)
	case "stat":
		s.writeSrvr(b, true)
	case "cons":
		for _, cc := range s.sessionConns() {
			cc.writeConsLine(b, true)
		}
		b.WriteString("\n")
	case "crst":
		for _, cc := range s.connList() {
			cc.stats.reset()
		}
		b.WriteString("Connection stats reset.\n")
	case "srst":
		s.stats.reset()
		b.WriteString("Server stats reset.\n")
	case "wchs":
		w, p, n := s.watches.Counts()
		fmt.Fprintf(b, "%d connections watching %d paths\nTotal watches:%d\n", w, p, n)
	case "wchc":
		for _, cc := range s.sessionConns() {
			paths := s.watches.PathsOf(cc)
			if len(paths) == 0 {
				continue
			}
			fmt.Fprintf(b, "0x%x\n", cc.sessionID.Load())
			for _, p := range paths {
				fmt.Fprintf(b, "\t%s\n", p)
			}
		}
	case "wchp":
		byPath := map[string][]int64{}
		for _, cc := range s.sessionConns() {
			for _, p := range s.watches.PathsOf(cc) {
				byPath[p] = append(byPath[p], cc.sessionID.Load())
			}
		}
		for _, p := range s.watches.Paths() {
			fmt.Fprintf(b, "%s\n", p)
			for _, id := range byPath[p] {
				fmt.Fprintf(b, "\t0x%x\n", id)
			}
		}
	case "mntr":
		s.writeMntr(b)
	case "envi":
		host, _ := os.Hostname()
		wd, _ := os.Getwd()
		fmt.Fprintf(b, "Environment:\nzookeeper.version=%s, built on %s\nhost.name=%s\n", Version, buildDate, host)
		fmt.Fprintf(b, "go.version=%s\nos.name=%s\nos.arch=%s\nuser.dir=%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, wd)
	case "conf":
		port := 0
		if a, ok := s.Addr().(*net.TCPAddr); ok {
			port = a.Port
		}
		size := dirSize(s.cfg.DataDir)
		fmt.Fprintf(b, "clientPort=%d\nsecureClientPort=-1\ndataDir=%s\ndataDirSize=%d\ndataLogDir=%s\ndataLogSize=%d\n",
			port, s.cfg.DataDir, size, s.cfg.DataDir, size)
		fmt.Fprintf(b, "tickTime=%d\nmaxClientCnxns=%d\nminSessionTimeout=%d\nmaxSessionTimeout=%d\nclientPortListenBacklog=-1\nserverId=0\n",
			s.cfg.TickTime.Milliseconds(), max(s.cfg.MaxClientCnxns, 0), s.cfg.MinSessionTimeout.Milliseconds(), s.cfg.MaxSessionTimeout.Milliseconds())
	case "dirs":
		size := dirSize(s.cfg.DataDir)
		fmt.Fprintf(b, "datadir_size: %d\nlogdir_size: %d\n", size, size)
	case "dump":
		s.writeDump(b)
	case "gtmk", "stmk":
		b.WriteString("0\n")
	case "hash":
		b.WriteString("\n")
	}
}

// sessionConns lists connections with an established session, oldest first.
func (s *Server) sessionConns() []*conn {
	var out []*conn
	for _, c := range s.connList() {
		if c.sessionID.Load() != 0 && !c.isClosed() {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].stats.established.Before(out[j].stats.established) })
	return out
}

func (s *Server) writeSrvr(b *strings.Builder, clients bool) {
	fmt.Fprintf(b, "Zookeeper version: %s, built on %s\n", Version, buildDate)
	if clients {
		b.WriteString("Clients:\n")
		for _, c := range s.sessionConns() {
			c.writeConsLine(b, false)
		}
		b.WriteString("\n")
	}
	lat := s.stats.latency()
	s.mu.RLock()
	zxid, nodes := s.tree.LastZxid(), s.tree.NodeCount()
	s.mu.RUnlock()
	fmt.Fprintf(b, "Latency min/avg/max: %d/%s/%d\n", lat.min, formatAvg(lat.avg()), lat.max)
	fmt.Fprintf(b, "Received: %d\nSent: %d\nConnections: %d\nOutstanding: %d\n", s.stats.received.Load(), s.stats.sent.Load(),
		len(s.sessionConns()), s.stats.outstanding.Load())
	fmt.Fprintf(b, "Zxid: 0x%x\nMode: standalone\nNode count: %d\n", zxid, nodes)
}

func formatAvg(v float64) string {
	s := fmt.Sprintf("%.4f", v)
	s = strings.TrimRight(s, "0")
	if strings.HasSuffix(s, ".") {
		s += "0"
	}
	return s
}

// writeConsLine prints a connection as `stat` (brief) or `cons` (full) do.
func (c *conn) writeConsLine(b *strings.Builder, full bool) {
	fmt.Fprintf(b, " /%s[1](queued=0,recved=%d,sent=%d", c.remote, c.stats.recv.Load(), c.stats.sent.Load())
	if !full {
		b.WriteString(")\n")
		return
	}
	op, cxid, zxid, resp, lat := c.stats.snapshot()
	fmt.Fprintf(b, ",sid=0x%x,lop=%s,est=%d,to=%d,lcxid=0x%x,lzxid=0x%x,lresp=%d,llat=%d,minlat=%d,avglat=%d,maxlat=%d)\n",
		c.sessionID.Load(), op, c.stats.established.UnixMilli(), c.timeout.Load(), uint32(cxid), uint64(zxid),
		resp.UnixMilli(), lat.last, lat.min, int64(lat.avg()), lat.max)
}

func (s *Server) writeMntr(b *strings.Builder) {
	lat := s.stats.latency()
	w, p, n := s.watches.Counts()
	s.mu.RLock()
	nodes, eph, size, zxid := s.tree.NodeCount(), s.tree.EphemeralCount(), s.tree.DataSize(), s.tree.LastZxid()
	s.mu.RUnlock()
	kv := []struct {
		k string
		v any
	}{
		{"zk_version", Version + ", built on " + buildDate},
		{"zk_server_state", "standalone"},
		{"zk_avg_latency", formatAvg(lat.avg())},
		{"zk_max_latency", lat.max},
		{"zk_min_latency", lat.min},
		{"zk_packets_received", s.stats.received.Load()},
		{"zk_packets_sent", s.stats.sent.Load()},
		{"zk_num_alive_connections", len(s.sessionConns())},
		{"zk_outstanding_requests", s.stats.outstanding.Load()},
		{"zk_znode_count", nodes},
		{"zk_watch_count", n},
		{"zk_ephemerals_count", eph},
		{"zk_approximate_data_size", size},
		{"zk_open_file_descriptor_count", openFDs()},
		{"zk_max_file_descriptor_count", maxFDs()},
		{"zk_uptime", time.Since(s.started).Milliseconds()},
		{"zk_global_sessions", s.sessions.Len()},
		{"zk_local_sessions", 0},
		{"zk_connection_count", len(s.connList())},
		{"zk_watch_paths", p},
		{"zk_watching_connections", w},
		{"zk_last_zxid", fmt.Sprintf("0x%x", zxid)},
	}
	for _, e := range kv {
		fmt.Fprintf(b, "%s\t%v\n", e.k, e.v)
	}
}

func (s *Server) writeDump(b *strings.Builder) {
	list := s.sessions.List()
	fmt.Fprintf(b, "SessionTracker dump:\nGlobal Sessions(%d):\n", len(list))
	for _, si := range list {
		fmt.Fprintf(b, "0x%x\t%dms\n", si.ID, si.Timeout.Milliseconds())
	}
	s.mu.RLock()
	type eph struct {
		id    int64
		paths []string
	}
	var ephs []eph
	for _, si := range list {
		if ps := s.tree.Ephemerals(si.ID, "/"); len(ps) > 0 {
			ephs = append(ephs, eph{si.ID, ps})
		}
	}
	s.mu.RUnlock()
	fmt.Fprintf(b, "ephemeral nodes dump:\nSessions with Ephemerals (%d):\n", len(ephs))
	for _, e := range ephs {
		fmt.Fprintf(b, "0x%x:\n", e.id)
		for _, p := range e.paths {
			fmt.Fprintf(b, "\t%s\n", p)
		}
	}
	conns := s.sessionConns()
	fmt.Fprintf(b, "Connections dump:\nConnections Sets (1)/(%d)\n", len(conns))
	for _, c := range conns {
		fmt.Fprintf(b, "  ip: %s sessionId: 0x%x\n", c.remote, c.sessionID.Load())
	}
}

func dirSize(dir string) int64 {
	var total int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	return total
}

func openFDs() int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(entries)
}
