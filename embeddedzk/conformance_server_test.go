package embeddedzk_test

import (
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/internal/testkit/apachezk"
)

func serverCases() []conformanceCase {
	return []conformanceCase{
		{"four_letter_ruok_isro", caseRuok},
		{"four_letter_srvr", caseSrvr},
		{"four_letter_mntr", caseMntr},
		{"four_letter_whitelist", caseWhitelist},
		{"get_ephemerals", caseGetEphemerals},
		{"get_all_children_number", caseAllChildrenNumber},
		{"who_am_i", caseWhoAmI},
	}
}

func fourLetter(t *ct, tg target, word string) string {
	t.Helper()
	out, err := apachezk.FourLetter(tg.addr, word, 5*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", word, err)
	}
	return out
}

func caseRuok(t *ct, tg target) {
	// Exactly these bytes, no newline.
	if out := fourLetter(t, tg, "ruok"); out != "imok" {
		t.Errorf("ruok = %q, want imok", out)
	}
	if out := fourLetter(t, tg, "isro"); out != "rw" {
		t.Errorf("isro = %q, want rw", out)
	}
	if ok := zk.FLWRuok([]string{tg.addr}, 5*time.Second); len(ok) != 1 || !ok[0] {
		t.Errorf("zk.FLWRuok = %v, want [true]", ok)
	}
}

var srvrLines = []*regexp.Regexp{
	regexp.MustCompile(`^Zookeeper version: \S+, built on .+$`),
	regexp.MustCompile(`^Latency min/avg/max: \d+/[\d.]+/\d+$`),
	regexp.MustCompile(`^Received: \d+$`),
	regexp.MustCompile(`^Sent: \d+$`),
	regexp.MustCompile(`^Connections: \d+$`),
	regexp.MustCompile(`^Outstanding: \d+$`),
	regexp.MustCompile(`^Zxid: 0x[0-9a-f]+$`),
	regexp.MustCompile(`^Mode: standalone$`),
	regexp.MustCompile(`^Node count: \d+$`),
}

func caseSrvr(t *ct, tg target) {
	out := fourLetter(t, tg, "srvr")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(srvrLines) {
		t.Fatalf("srvr: %d lines, want %d:\n%s", len(lines), len(srvrLines), out)
	}
	for i, re := range srvrLines {
		if !re.MatchString(lines[i]) {
			t.Errorf("srvr line %d = %q, want %s", i+1, lines[i], re)
		}
	}
	stats, ok := zk.FLWSrvr([]string{tg.addr}, 5*time.Second)
	if tg.name == "apache" {
		// Apache 3.7+ prints "built on yyyy-MM-dd", which go-zookeeper
		// v1.0.4's FLWSrvr cannot parse; the issue asks the embedded server
		// to print the older date form so that helper works against it.
		if ok {
			t.Logf("FLWSrvr parsed Apache's srvr; the go-zookeeper limitation is gone")
		}
		return
	}
	if !ok || len(stats) != 1 || stats[0].Error != nil || stats[0].Mode != zk.ModeStandalone {
		var err error
		if len(stats) == 1 {
			err = stats[0].Error
		}
		t.Errorf("zk.FLWSrvr = ok %v, error %v; want a standalone server's stats", ok, err)
	}
}

func caseMntr(t *ct, tg target) {
	c := connect(t, tg)
	p := casePath(t)
	mustCreate(t, c, p, nil, zk.FlagPersistent)
	out := fourLetter(t, tg, "mntr")
	line := regexp.MustCompile(`^zk_[^\s]+\t\S.*$`)
	values := map[string]string{}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !line.MatchString(l) {
			t.Errorf("mntr line %q is not zk_<key><TAB><value>", l)
			continue
		}
		k, v, _ := strings.Cut(l, "\t")
		values[k] = v
	}
	if values["zk_server_state"] != "standalone" {
		t.Errorf("zk_server_state = %q, want standalone", values["zk_server_state"])
	}
	if values["zk_version"] == "" {
		t.Errorf("zk_version missing")
	}
	for _, k := range []string{"zk_znode_count", "zk_num_alive_connections", "zk_packets_received",
		"zk_packets_sent", "zk_outstanding_requests", "zk_watch_count", "zk_ephemerals_count",
		"zk_approximate_data_size", "zk_max_latency", "zk_min_latency"} {
		if _, err := strconv.ParseInt(values[k], 10, 64); err != nil {
			t.Errorf("%s = %q, want an integer", k, values[k])
		}
	}
	if _, err := strconv.ParseFloat(values["zk_avg_latency"], 64); err != nil {
		t.Errorf("zk_avg_latency = %q, want a number", values["zk_avg_latency"])
	}
	// Root, /zookeeper, its two children and this case's node at least.
	if n, _ := strconv.Atoi(values["zk_znode_count"]); n < 5 {
		t.Errorf("zk_znode_count = %d, want at least 5", n)
	}
	if n, _ := strconv.Atoi(values["zk_num_alive_connections"]); n < 1 {
		t.Errorf("zk_num_alive_connections = %d, want at least 1", n)
	}
}

func caseGetEphemerals(t *ct, tg target) {
	p := casePath(t)
	c, _ := dialRaw(t, tg.addr, int32(clientTimeout.Milliseconds()), 0, nil)
	c.create(t, p, zk.FlagPersistent)
	c.create(t, p+"/e1", zk.FlagEphemeral)
	c.create(t, p+"/e2", zk.FlagEphemeral)
	c.create(t, p+"/persistent", zk.FlagPersistent)
	// Another session's ephemerals are not listed.
	mustCreate(t, connect(t, tg), p+"/theirs", nil, zk.FlagEphemeral)

	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{p, []string{p + "/e1", p + "/e2"}},
		{p + "/e1", []string{p + "/e1"}},
		{"/", []string{p + "/e1", p + "/e2"}},
		{p + "/none", nil},
	} {
		var e jute
		e.str(tc.prefix)
		code, d, err := c.call(opGetEphemerals, e.b)
		if err != nil || code != 0 {
			t.Fatalf("getEphemerals %q: code %d, %v", tc.prefix, code, err)
		}
		got := d.strings()
		sort.Strings(got)
		if d.err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("getEphemerals %q = %q (%v), want %q", tc.prefix, got, d.err, tc.want)
		}
	}
}

func caseAllChildrenNumber(t *ct, tg target) {
	p := casePath(t)
	c := connect(t, tg)
	for _, path := range []string{p, p + "/a", p + "/a/b", p + "/a/b/c", p + "/d"} {
		mustCreate(t, c, path, nil, zk.FlagPersistent)
	}
	raw, _ := dialRaw(t, tg.addr, int32(clientTimeout.Milliseconds()), 0, nil)
	for _, tc := range []struct {
		path string
		code int32
		want int32
	}{
		{p, 0, 4}, // every descendant, not the node itself
		{p + "/a/b/c", 0, 0},
		{p + "/missing", -101, 0},
	} {
		var e jute
		e.str(tc.path)
		code, d, err := raw.call(opGetAllChildrenNumber, e.b)
		if err != nil || code != tc.code {
			t.Errorf("getAllChildrenNumber %s: code %d, %v; want %d", tc.path, code, err, tc.code)
			continue
		}
		if code == 0 {
			if n := d.int(); d.err != nil || n != tc.want {
				t.Errorf("getAllChildrenNumber %s = %d (%v), want %d", tc.path, n, d.err, tc.want)
			}
		}
	}
}

type clientInfo struct{ Scheme, User string }

func whoAmI(t *ct, c *rawConn) []clientInfo {
	t.Helper()
	code, d, err := c.call(opWhoAmI, nil)
	if err != nil || code != 0 {
		t.Fatalf("whoAmI: code %d, %v", code, err)
	}
	n := d.int()
	var out []clientInfo
	for i := int32(0); i < n && d.err == nil; i++ {
		out = append(out, clientInfo{d.str(), d.str()})
	}
	if d.err != nil {
		t.Fatalf("whoAmI reply: %v", d.err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Scheme < out[j].Scheme })
	return out
}

func caseWhoAmI(t *ct, tg target) {
	c, _ := dialRaw(t, tg.addr, int32(clientTimeout.Milliseconds()), 0, nil)
	// Every connection carries its ip id.
	if got, want := whoAmI(t, c), []clientInfo{{"ip", "127.0.0.1"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("whoAmI = %+v, want %+v", got, want)
	}
	var e jute
	e.int(0)
	e.str("digest")
	e.buf([]byte("user:password"))
	if code, _, err := c.call(opAuth, e.b); err != nil || code != 0 {
		t.Fatalf("auth: code %d, %v", code, err)
	}
	// The digest scheme reports the user name only.
	if got, want := whoAmI(t, c), []clientInfo{{"digest", "user"}, {"ip", "127.0.0.1"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("whoAmI after auth = %+v, want %+v", got, want)
	}
}

// caseWhitelist checks words left out of 4lw.commands.whitelist: they show
// sessions, ephemeral paths, the environment, or reset statistics.
func caseWhitelist(t *ct, tg target) {
	c := connect(t, tg)
	p := casePath(t)
	mustCreate(t, c, p, nil, zk.FlagPersistent)
	mustCreate(t, c, p+"/eph-token=s3cret", nil, zk.FlagEphemeral)
	c.GetW(p)
	for _, w := range []string{"dump", "envi", "conf", "cons", "wchc", "wchp", "wchs", "stat", "crst", "srst", "dirs", "gtmk", "hash"} {
		want := w + " is not executed because it is not in the whitelist.\n"
		if out := fourLetter(t, tg, w); out != want {
			t.Errorf("%s = %q, want %q", w, out, want)
		}
	}
	// srvr is answered whatever the whitelist says (zkServer.sh needs it).
	if out := fourLetter(t, tg, "srvr"); !strings.HasPrefix(out, "Zookeeper version: ") {
		t.Errorf("srvr, not in the whitelist = %q, want the server's stats", out)
	}
}
