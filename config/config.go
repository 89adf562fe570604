// Package config loads one node's configuration: the TOML file (dubbo.toml by
// default), then DUBBO_* environment variables, then --set key=value flags,
// each overriding the one before. Every section belongs to the package that
// runs it; this package only composes them into File and reports mistakes
// with the file, line and key involved.
//
// Values mean the same wherever they come from: a duration is a Go duration
// string ("1s", "500ms") or a bare integer of milliseconds, as in Dubbo
// (timeout = 3000 is 3s); a list given as text (--set, environment) is a
// TOML array ("[]", "[\"a\", \"b\"]"), "[a,b]" or "a,b". A relative path
// written in the file (data dirs, plugins, cache file, monitor db) is
// relative to the file's directory, as in docker-compose; one given in the
// environment or --set is relative to the current directory.
package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/parsers/toml/v2"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/v2"

	"github.com/dubbo-lab/dubbo/console"
	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/monitor"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/qos"
)

// File is everything one dubbo.toml can say. A role ignores the sections it
// does not use.
type File struct {
	// DataDir is the base of every default path (registry data, monitor db).
	// Default ".dubbo".
	DataDir     string      `koanf:"data-dir"`
	Application Application `koanf:"application"`
	Registry    Registry    `koanf:"registry"`
	// Protocol is a provider's main protocol (dubbo, or tri) and its
	// business pool; replicas take the following ports.
	Protocol provider.ProtocolConfig `koanf:"protocol"`
	// Protocols are more protocols a provider serves ([protocols.dubbo],
	// [protocols.tri]); replicas take the following ports of each.
	Protocols provider.Protocols `koanf:"protocols"`
	Provider  Provider           `koanf:"provider"`
	Consumer  Consumer           `koanf:"consumer"`
	// Monitor is how nodes report their statistics, and the monitor role.
	Monitor monitor.Config `koanf:"monitor"`
	// Console is the monitor role's HTTP server (package console): the
	// web console, the statistics API and /metrics.
	Console Console `koanf:"console"`
	// QoS is Dubbo's QoS port, one per process.
	QoS qos.Config `koanf:"qos"`
	// Warnings say what Load overrode that the user may not expect: a
	// config value that one of Dubbo's address environment variables
	// (DUBBO_IP_TO_REGISTRY, ...) replaced.
	Warnings []string `koanf:"-"`
}

// Console is the [console] section: the monitor role's HTTP server, which
// package console serves (the web console, the statistics API, /metrics).
type Console struct {
	// Listen is its address; "" turns it off. Default
	// console.DefaultListen, 127.0.0.1:8080.
	Listen string `koanf:"listen"`
	// Token is required when Listen is not loopback (the console refuses
	// to start without it), and then for reading and every change; on
	// loopback, when set, for every change. Default "".
	Token string `koanf:"token"`
	// ReadToken lets its holder read the console but change nothing (a
	// dashboard screen); it needs Token. Default "".
	ReadToken string `koanf:"read-token"`
}

// Provider is the [provider] section: the provider role and its plugins.
type Provider struct {
	provider.Config `koanf:",squash"`
	// Plugins are handler plugin binaries whose services this node exports.
	Plugins []string `koanf:"plugins"`
	// Replicas is how many provider instances `dubbo up` starts, on
	// consecutive ports from protocol.port. Default 1.
	Replicas int `koanf:"replicas"`
}

// Consumer is the [consumer] section: references, consumer plugins and the
// HTTP/JSON gateway.
type Consumer struct {
	consumer.Config `koanf:",squash"`
	// Plugins are consumer-side plugin binaries (business code that only calls).
	Plugins []string `koanf:"plugins"`
	Gateway Gateway  `koanf:"gateway"`
}

// Gateway is the consumer's HTTP/JSON gateway.
type Gateway struct {
	// Listen is the gateway's address; "" turns it off. Default "".
	Listen string `koanf:"listen"`
	// Token must come with every call from off loopback, as
	// "Authorization: Bearer <token>"; required to listen beyond
	// loopback. Default "".
	Token string `koanf:"token"`
	// Hosts are more names callers may use for the gateway in Host and
	// Origin (a DNS name in front of it). Default none.
	Hosts []string `koanf:"hosts"`
}

// Application names this node to the registry and the monitor.
type Application struct {
	// Name is the Dubbo application name. Default "dubbo-app".
	Name string `koanf:"name"`
}

// Registry says where nodes register and, for the registry role, how the
// embedded server runs.
type Registry struct {
	// Address is the registry URL; "" means no registry (direct URLs only).
	// Default "zookeeper://127.0.0.1:2181".
	Address string `koanf:"address"`
	// Server is the embedded registry (the registry role). Its listen ""
	// means none: dubbo up then starts no registry and the nodes use the
	// one at Address, a ZooKeeper already running for instance.
	Server embeddedzk.Config `koanf:"server"`
}

// EnvPrefix starts every environment variable that overrides a key:
// DUBBO_REGISTRY_SERVER_TICK_TIME sets registry.server.tick-time.
const EnvPrefix = "DUBBO_"

// Load reads path (skipped when path is "" or, if optional, missing), then the
// environment, then the key=value overrides.
func Load(path string, optional bool, environ []string, sets []string) (*File, error) {
	k := koanf.New(".")
	path, raw, err := loadFile(k, path, optional)
	if err != nil {
		return nil, err
	}
	// Relative paths written in the file are relative to the file, as in
	// docker-compose; those from the environment and --set stay relative to
	// the current directory.
	var inFile []string
	if path != "" {
		for _, key := range pathKeys {
			if k.Exists(key) {
				inFile = append(inFile, key)
			}
		}
	}
	keys := knownKeys(reflect.TypeOf(File{}), "")
	env, err := loadEnv(k, environ, keys)
	if err != nil {
		return nil, err
	}
	set, err := loadSets(k, sets, keys)
	if err != nil {
		return nil, err
	}
	for _, key := range inFile {
		if _, ok := env[key]; ok {
			continue
		}
		if _, ok := set[key]; ok {
			continue
		}
		if err := k.Set(key, relativeTo(filepath.Dir(path), k.Get(key))); err != nil {
			return nil, fmt.Errorf("config %s: key %s: %w", path, key, err)
		}
	}

	f, err := decode(k)
	if err != nil {
		return nil, locate(path, raw, err, k.Get)
	}
	if f.Warnings, err = applyAddressEnv(f, environ); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	f.applyDefaults()
	if err := f.validate(); err != nil {
		return nil, locate(path, raw, err, k.Get)
	}
	return f, nil
}

// loadFile loads the TOML file at path into k and returns the path ("" when
// there is none: not given, or optional and missing) and its bytes.
func loadFile(k *koanf.Koanf, path string, optional bool) (string, []byte, error) {
	if path == "" {
		return "", nil, nil
	}
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := k.Load(rawBytes(b), toml.Parser()); err != nil {
			return "", nil, fmt.Errorf("config %s: %w", path, describeTOMLError(err))
		}
		return path, b, nil
	case optional && errors.Is(err, os.ErrNotExist):
		return "", nil, nil
	}
	return "", nil, fmt.Errorf("config: %w", err)
}

// loadEnv loads the DUBBO_* variables of environ into k and returns them
// by key.
func loadEnv(k *koanf.Koanf, environ []string, keys map[string]reflect.Type) (map[string]any, error) {
	env, err := envOverrides(environ, keys)
	if err != nil {
		return nil, fmt.Errorf("config: environment: %w", err)
	}
	if len(env) > 0 {
		if err := k.Load(confmap.Provider(env, "."), nil); err != nil {
			return nil, fmt.Errorf("config: environment: %w", err)
		}
	}
	return env, nil
}

// loadSets loads the key=value overrides into k and returns them by key.
func loadSets(k *koanf.Koanf, sets []string, keys map[string]reflect.Type) (map[string]any, error) {
	if len(sets) == 0 {
		return nil, nil
	}
	m := make(map[string]any, len(sets))
	for _, s := range sets {
		key, val, ok := strings.Cut(s, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, fmt.Errorf("config: --set %q: want key=value", s)
		}
		typ, known := keys[key]
		if !known {
			return nil, fmt.Errorf("config: --set %q: unknown key %q%s", s, key, suggest(key, keys))
		}
		v, err := textValue(val, typ)
		if err != nil {
			return nil, fmt.Errorf("config: --set %q: key %s: %w", s, key, err)
		}
		m[key] = v
	}
	if err := k.Load(confmap.Provider(m, "."), nil); err != nil {
		return nil, fmt.Errorf("config: --set: %w", err)
	}
	return m, nil
}

// decode decodes k into a File; every key must be one File knows.
func decode(k *koanf.Koanf) (*File, error) {
	// Keys whose "" means off get their defaults before decoding, so that
	// "" set in the file stays "".
	f := &File{QoS: qos.Config{Listen: qos.DefaultListen}, Console: Console{Listen: console.DefaultListen},
		Registry: Registry{Server: embeddedzk.Config{Listen: embeddedzk.Config{}.WithDefaults().Listen}}}
	dc := &mapstructure.DecoderConfig{
		DecodeHook:       mapstructure.ComposeDecodeHookFunc(durationHook, boolTextHook),
		ErrorUnused:      true,
		WeaklyTypedInput: true,
		Result:           f,
		TagName:          "koanf",
	}
	if err := k.UnmarshalWithConf("", f, koanf.UnmarshalConf{DecoderConfig: dc}); err != nil {
		return nil, err
	}
	return f, nil
}

// validate checks the sections that check themselves.
func (f *File) validate() error {
	if err := f.Registry.Server.Validate(); err != nil {
		return fmt.Errorf("registry.server.%w", err)
	}
	if err := f.Monitor.Validate(); err != nil {
		return err
	}
	if err := f.Consumer.Validate(); err != nil {
		return err
	}
	return f.Provider.Config.Validate()
}

// pathKeys are the keys whose values are file system paths. Defaults
// derived from data-dir follow it.
var pathKeys = []string{
	"data-dir",
	"registry.server.data-dir",
	"provider.plugins",
	"consumer.plugins",
	"consumer.cache-file",
	"monitor.server.db",
}

// relativeTo joins dir before every relative path in v, a path or a list of
// them; "" and values of other types are left to the decoder.
func relativeTo(dir string, v any) any {
	switch v := v.(type) {
	case string:
		if v == "" || filepath.IsAbs(v) {
			return v
		}
		return filepath.Join(dir, v)
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			out[i] = relativeTo(dir, item)
		}
		return out
	}
	return v
}

func (f *File) applyDefaults() {
	if f.DataDir == "" {
		f.DataDir = ".dubbo"
	}
	if f.Application.Name == "" {
		f.Application.Name = "dubbo-app"
	}
	if f.Registry.Server.DataDir == "" {
		f.Registry.Server.DataDir = filepath.Join(f.DataDir, "registry")
	}
	noServer := f.Registry.Server.Listen == ""
	f.Registry.Server = f.Registry.Server.WithDefaults()
	if noServer {
		f.Registry.Server.Listen = "" // no embedded registry: dubbo up uses registry.address
	}
	if f.Provider.Replicas == 0 {
		f.Provider.Replicas = 1
	}
	// The role configs take the shared sections, so each role package
	// sees one complete Config.
	f.Provider.Application, f.Consumer.Application = f.Application.Name, f.Application.Name
	f.Provider.Registry, f.Consumer.Registry = f.Registry.Address, f.Registry.Address
	f.Provider.Protocol, f.Provider.Protocols = f.Protocol, f.Protocols
	if f.Monitor.Server.DB == "" {
		f.Monitor.Server.DB = filepath.Join(f.DataDir, "monitor.db")
	}
	f.Monitor.Spool = filepath.Join(f.DataDir, "spool")
	if f.Consumer.CacheFile == "" {
		f.Consumer.CacheFile = filepath.Join(f.DataDir, "cache", "consumer-"+f.Application.Name+".json")
	}
}

// rawBytes lets koanf parse bytes we already read, so errors can point at lines.
type rawBytes []byte

func (b rawBytes) ReadBytes() ([]byte, error) { return b, nil }
func (b rawBytes) Read() (map[string]any, error) {
	return nil, errors.New("config: raw bytes need a parser")
}

// describeTOMLError keeps go-toml's "line:column" detail.
func describeTOMLError(err error) error {
	type positioned interface{ Position() (int, int) }
	var p positioned
	if errors.As(err, &p) {
		line, col := p.Position()
		return fmt.Errorf("line %d, column %d: %w", line, col, err)
	}
	return err
}

var (
	invalidKeys = regexp.MustCompile(`'([a-z0-9.\-\[\]]*)' has invalid keys: ([a-z0-9.\-_]+)`)
	quotedKey   = regexp.MustCompile(`'([a-z0-9.\-\[\]]+)'`)
)

// locate turns a decoding error into "file:line: key ...: what is wrong".
func locate(path string, raw []byte, err error, value func(string) any) error {
	msg := strings.TrimSpace(strings.ReplaceAll(err.Error(), "decoding failed due to the following error(s):", ""))
	msg = strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", " ")), " ")
	var key string
	if m := invalidKeys.FindStringSubmatch(msg); m != nil {
		key = strings.TrimPrefix(m[1]+"."+m[2], ".")
		msg = "unknown key"
	} else if m := quotedKey.FindStringSubmatch(msg); m != nil {
		key = m[1]
	} else if i := strings.IndexAny(msg, " :"); i > 0 {
		if keyPathKnown(reflect.TypeOf(File{}), strings.Split(listIndex.ReplaceAllString(msg[:i], ""), ".")) {
			// A section's Validate names its key first.
			key, msg = msg[:i], strings.TrimLeft(msg[i:], ": ")
		}
	}
	// The decoder does not always quote the value it refused; say it.
	if key != "" && msg != "unknown key" {
		if v := value(key); v != nil {
			if raw := fmt.Sprint(v); !strings.Contains(msg, raw) {
				msg += fmt.Sprintf(" (got %q)", raw)
			}
		}
	}
	if path == "" {
		if key != "" {
			return fmt.Errorf("config key %s: %s", key, msg)
		}
		return fmt.Errorf("config: %s", msg)
	}
	if key != "" {
		if line := lineOf(raw, key); line > 0 {
			return fmt.Errorf("%s:%d: key %s: %s", path, line, key, msg)
		}
		return fmt.Errorf("%s: key %s (set by environment or --set): %s", path, key, msg)
	}
	return fmt.Errorf("%s: %s", path, msg)
}

var (
	tableHeader = regexp.MustCompile(`^\s*\[\[?\s*([A-Za-z0-9_.\-]+)\s*\]\]?`)
	listIndex   = regexp.MustCompile(`\[\d+\]`)
)

// lineOf finds the 1-based line where a dotted key is assigned in TOML text,
// following [table] headers and counting [[array]] tables, so that
// "consumer.references[1].loadbalance" is found in the second
// [[consumer.references]]; a key inside an inline table (parameters =
// {...}) is found at the line that assigns the table. 0 if not found.
func lineOf(raw []byte, key string) int {
	if n, _ := lineOfKey(raw, key); n > 0 {
		return n
	}
	for k := key; strings.Contains(k, "."); {
		k = k[:strings.LastIndex(k, ".")]
		if n, header := lineOfKey(raw, k); n > 0 {
			if header && !strings.HasSuffix(k, "]") {
				// Set by the environment or --set, not in this table. (A list
				// element's key can only be missing from its [[table]].)
				return 0
			}
			return n
		}
	}
	return 0
}

// lineOfKey finds where key is assigned or opened as a table; header says
// it is a table header.
func lineOfKey(raw []byte, key string) (line int, header bool) {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	table, n := "", 0
	elements := map[string]int{} // [[array]] path, indexes resolved -> elements seen
	for sc.Scan() {
		n++
		text := strings.TrimSpace(sc.Text())
		if m := tableHeader.FindStringSubmatch(text); m != nil {
			table = resolveTable(m[1], strings.HasPrefix(text, "[["), elements)
			if table == key {
				return n, true
			}
			continue
		}
		name, _, ok := strings.Cut(text, "=")
		if !ok || strings.HasPrefix(text, "#") {
			continue
		}
		full := strings.Trim(strings.TrimSpace(name), `"`)
		if table != "" {
			full = table + "." + full
		}
		if full == key {
			return n, false
		}
	}
	return 0, false
}

// resolveTable gives a table header its list indexes: the current element
// of each array table it lies in, and a new element when it opens one.
func resolveTable(header string, array bool, elements map[string]int) string {
	parts := strings.Split(header, ".")
	path := ""
	for i, p := range parts {
		if path != "" {
			path += "."
		}
		path += p
		if array && i == len(parts)-1 {
			elements[path]++
		}
		if n := elements[path]; n > 0 {
			path += "[" + strconv.Itoa(n-1) + "]"
		}
	}
	return path
}

// keyPathKnown reports whether the dotted key parts (list indexes removed)
// name a field of t, looking into lists of tables; any key below a map
// (parameters) counts.
func keyPathKnown(t reflect.Type, parts []string) bool {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if len(parts) == 0 || t.Kind() == reflect.Map {
		return true
	}
	if t.Kind() != reflect.Struct || t.PkgPath() == "time" {
		return false
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		switch tag := f.Tag.Get("koanf"); tag {
		case "", "-":
		case ",squash":
			if keyPathKnown(f.Type, parts) {
				return true
			}
		case parts[0]:
			if keyPathKnown(f.Type, parts[1:]) {
				return true
			}
		}
	}
	return false
}

// knownKeys lists every dotted key File accepts, with the Go type of its value.
func knownKeys(t reflect.Type, prefix string) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("koanf")
		if tag == "" || tag == "-" {
			continue
		}
		ft := f.Type
		if tag == ",squash" {
			for k, typ := range knownKeys(ft, prefix) {
				out[k] = typ
			}
			continue
		}
		key := prefix + tag
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft.PkgPath() != "time" {
			for k, typ := range knownKeys(ft, key+".") {
				out[k] = typ
			}
			continue
		}
		out[key] = ft
	}
	return out
}

// envOverrides maps DUBBO_REGISTRY_SERVER_TICK_TIME onto the known key
// registry.server.tick-time; unknown DUBBO_ variables are ignored, and so
// are Dubbo's DUBBO_IP_TO_BIND, DUBBO_PORT_TO_BIND, DUBBO_IP_TO_REGISTRY
// and DUBBO_PORT_TO_REGISTRY, which are not keys.
func envOverrides(environ []string, keys map[string]reflect.Type) (map[string]any, error) {
	byEnv := make(map[string]string, len(keys))
	for k := range keys {
		byEnv[EnvPrefix+strings.NewReplacer(".", "_", "-", "_").Replace(strings.ToUpper(k))] = k
	}
	out := map[string]any{}
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, EnvPrefix) || isAddressEnv(name) {
			continue // Dubbo's address variables are read as Java reads them (addressenv.go)
		}
		if key, ok := byEnv[name]; ok {
			v, err := textValue(val, keys[key])
			if err != nil {
				return nil, fmt.Errorf("%s: key %s: %w", name, key, err)
			}
			out[key] = v
		}
	}
	return out, nil
}

// textValue turns the text of a --set or an environment variable into the
// value of a key of type typ. Lists accept a TOML array ("[]", "[\"a\",
// \"b\"]", "[{interface = \"x\"}]"), "[a,b]" and "a,b"; other values stay
// text for the decoder.
func textValue(text string, typ reflect.Type) (any, error) {
	if typ.Kind() != reflect.Slice {
		return text, nil
	}
	s := strings.TrimSpace(text)
	if strings.HasPrefix(s, "[") {
		doc, err := toml.Parser().Unmarshal([]byte("v = " + s))
		if err == nil {
			return doc["v"], nil
		}
		if typ.Elem().Kind() != reflect.String {
			return nil, fmt.Errorf("want a TOML array such as [] (got %q): %v", text, describeTOMLError(err))
		}
		if !strings.HasSuffix(s, "]") {
			return nil, fmt.Errorf("want a list such as [a, b] or a,b (got %q): no closing ]", text)
		}
		s = s[1 : len(s)-1]
	}
	if typ.Elem().Kind() != reflect.String {
		return nil, fmt.Errorf("want a TOML array such as [] (got %q)", text)
	}
	items := []string{}
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items, nil
}

// durationHook decodes durations as Dubbo reads them: a bare integer is
// milliseconds (in the file, --set and the environment alike), anything
// else a Go duration string.
func durationHook(from, to reflect.Type, data any) (any, error) {
	if to != reflect.TypeOf(time.Duration(0)) {
		return data, nil
	}
	switch v := data.(type) {
	case int:
		return time.Duration(v) * time.Millisecond, nil
	case int64:
		return time.Duration(v) * time.Millisecond, nil
	case float64:
		return time.Duration(v * float64(time.Millisecond)), nil
	case string:
		s := strings.TrimSpace(v)
		if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Duration(ms) * time.Millisecond, nil
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return nil, fmt.Errorf("%w (want a duration such as \"500ms\" or \"3s\", or milliseconds)", err)
		}
		return d, nil
	}
	return data, nil
}

// boolTextHook writes a TOML boolean given for text (a parameter such as
// sticky = true) as Java reads one, "true" or "false"; weak decoding
// would write "1" or "0".
func boolTextHook(from, to reflect.Type, data any) (any, error) {
	if b, ok := data.(bool); ok && to.Kind() == reflect.String {
		return strconv.FormatBool(b), nil
	}
	return data, nil
}

// suggest names known keys that share the mistyped key's last part or prefix.
func suggest(key string, keys map[string]reflect.Type) string {
	var near []string
	last := key[strings.LastIndex(key, ".")+1:]
	for k := range keys {
		if strings.HasSuffix(k, "."+last) || strings.HasPrefix(k, key) {
			near = append(near, k)
		}
	}
	if len(near) == 0 {
		return ""
	}
	sort.Strings(near)
	return " (did you mean " + strings.Join(near, ", ") + "?)"
}
