package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sort"
	"strings"
	"sync"
)

// maxLine bounds one log line kept from a plugin; longer lines are cut.
const maxLine = 16 << 10

// tailLines is how many recent stderr lines a failed start quotes.
const tailLines = 8

// lineLogger turns a plugin's byte stream into log records, one per line.
// Lines that are hclog/sdk JSON ({"@level","@message",...}) keep their level
// and attributes; other lines are logged as they are, at level, except that
// after a Go panic header everything is an error. It also keeps the last
// few lines for error messages.
type lineLogger struct {
	log   *slog.Logger
	level slog.Level

	mu      sync.Mutex
	buf     []byte
	inPanic bool
	tail    []string
}

func newLineLogger(l *slog.Logger, stream string, level slog.Level) *lineLogger {
	return &lineLogger{log: l.With("stream", stream), level: level}
}

func (w *lineLogger) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.buf = append(w.buf, p...)
			if len(w.buf) >= maxLine {
				w.emit(w.buf)
				w.buf = w.buf[:0]
			}
			break
		}
		w.buf = append(w.buf, p[:i]...)
		w.emit(w.buf)
		w.buf = w.buf[:0]
		p = p[i+1:]
	}
	return n, nil
}

// Flush logs a last line that had no newline.
func (w *lineLogger) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(w.buf)
		w.buf = w.buf[:0]
	}
}

// Tail returns the last lines written, oldest first.
func (w *lineLogger) Tail() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.tail...)
}

func (w *lineLogger) emit(line []byte) {
	line = bytes.TrimRight(line, "\r")
	if len(line) > maxLine {
		line = line[:maxLine]
	}
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	if len(w.tail) == tailLines {
		w.tail = append(w.tail[:0], w.tail[1:]...)
	}
	w.tail = append(w.tail, string(line))

	if line[0] == '{' {
		if msg, level, attrs, ok := parseJSONLine(line); ok {
			w.log.Log(context.Background(), level, msg, attrs...)
			return
		}
	}
	s := string(line)
	if strings.HasPrefix(s, "panic: ") || strings.HasPrefix(s, "fatal error: ") {
		w.inPanic = true
	}
	level := w.level
	if w.inPanic {
		level = slog.LevelError
	}
	w.log.Log(context.Background(), level, s)
}

// parseJSONLine reads one structured line; anything unexpected in it makes
// the line plain text rather than an error, since it comes from a plugin.
func parseJSONLine(line []byte) (msg string, level slog.Level, attrs []any, ok bool) {
	var m map[string]any
	if json.Unmarshal(line, &m) != nil {
		return "", 0, nil, false
	}
	msg, ok = m["@message"].(string)
	if !ok {
		return "", 0, nil, false
	}
	lv, _ := m["@level"].(string)
	switch strings.ToLower(lv) {
	case "trace", "debug":
		level = slog.LevelDebug
	case "warn", "warning":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	default:
		level = slog.LevelInfo
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		switch k {
		case "@message", "@level", "@timestamp":
			continue
		case "@module":
			k = "module"
		}
		attrs = append(attrs, k, v)
	}
	return msg, level, attrs, true
}
