// Package store keeps the monitor's call statistics in SQLite.
//
// A Row is one statistics report of Dubbo's MonitorService.collect: what one
// node (Row.Node) counted for one service method towards one peer during
// one interval, on the provider or the consumer side, with the interval's
// response-time histogram when the node sends one (ours do; Java and
// dubbo-go nodes do not). The monitor role decodes reports, checks each
// with Row.Validate and hands batches to Insert; the console reads them
// back with Query (the rows, for GET /api/v1/stats), Series (per-step sums
// for its charts, GET /api/v1/series) and Summary (the calls of a time
// range per service, method, provider, consumer, application or
// application → service edge, for its pages, GET /api/v1/traffic). Each
// answers percentiles (p50, p90, p99) from the merged histograms of the
// calls it adds up (package histogram: within a bucket, under 25%, of the
// true value), null where no reporter sent one, and filters by version and
// group as well as by interface, method, side and address.
//
// Each interval is stored once: a row whose node, side, interface, group,
// version, method, address, consumer and time are already stored is
// ignored and counted in Stats().Duplicates, so a report sent again after a
// lost answer is not counted twice.
//
// Data is kept at two resolutions. Rows as reported stay for
// Options.RawRetention (24 h); Retain (run every minute by Run) then folds
// each complete hour of them into one hourly row per stream (sums, maxima,
// averaged concurrency, merged histograms) and drops hourly rows older
// than Options.RollupRetention (30 days). A time range holds either
// reported rows or hourly rows, never both, so summing Success+Failure
// over any query gives the calls made in it exactly; rows that arrive for
// an hour already folded are refused (Stats().Stale) rather than counted
// twice.
//
// Beside the rows, Insert keeps their sums per minute, hour and day at
// six levels of detail (sums.go): per provider process and per consumer
// host across services; per service, and per method, calling application
// and provider-consumer pair of each; keyed by integer ids as rows are
// by their streams. Series and Summary read the least detailed level that
// answers, in as few spans as cover the range, so the last five minutes
// of every service are five sums per service and side, whatever the
// number of nodes and callers. Retain drops the minute sums of folded
// hours: their hour's sum answers for them.
//
// Beside the statistics, the store keeps the web console's rule changes
// (audit.go): RecordChange stores one, Changes lists a rule's history,
// ChangeByID reads one back to restore it. Retention does not touch them.
//
// One Store owns its file: it serialises its writes itself (a second
// process writing the same file is not supported). Reads run concurrently
// with writes (WAL).
package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/dubbo-lab/dubbo/node/stats/histogram"
)

// Options configure a Store. The zero value gives the defaults.
type Options struct {
	// RawRetention is how long rows are kept as reported before they are
	// folded into hourly rows. Default 24h; at least 1h.
	RawRetention time.Duration
	// RollupRetention is how long hourly rows are kept. Default 720h (30
	// days); at least RawRetention.
	RollupRetention time.Duration
	// Now is the clock retention reads. Default time.Now.
	Now func() time.Time
	// Logger receives retention errors and summaries. Default slog.Default().
	Logger *slog.Logger
}

const (
	defaultRawRetention    = 24 * time.Hour
	defaultRollupRetention = 720 * time.Hour
	hour                   = 3600 // seconds
)

// Store is the monitor's statistics database. Its methods are safe for
// concurrent use.
type Store struct {
	path string
	opts Options
	log  *slog.Logger

	// wdb has a single connection: every write goes through it, in
	// BEGIN IMMEDIATE transactions, while mu is held. rdb serves reads.
	wdb, rdb *sql.DB
	stmts    writeStmts

	mu sync.Mutex // held by Insert and by each step of Retain
	// Caches of the interfaces, streams and sum_keys tables, and
	// sum_rollup.rolled_through, guarded by mu.
	ifaces     map[string]*iface
	streams    map[streamKey]*stream
	keys       map[sumKey]*entry
	sumsRolled int64

	statsMu sync.Mutex
	stats   Stats
}

// Stats are counters since Open, for the monitor's own metrics.
type Stats struct {
	RowsStored     int64         // rows inserted
	Duplicates     int64         // rows ignored because that interval of that stream was already stored
	Stale          int64         // rows refused because their hour was already folded into hourly rows
	InsertBatches  int64         // Insert calls that committed
	InsertTime     time.Duration // total time spent in those calls
	LastInsertTime time.Duration // time of the last one
	LastInsertRows int           // rows it was given
	RolledUp       int64         // reported rows folded into hourly rows
	HourlyExpired  int64         // hourly rows deleted after RollupRetention
	RetainRuns     int64         // Retain calls that completed
	RetainErrors   int64         // Retain calls that failed
	DBBytes        int64         // size of the database file and its WAL now
}

// ErrNewerSchema is returned by Open for a database written by a newer
// version of this package.
var ErrNewerSchema = errors.New("database schema is newer than this program")

// Open opens the store at path, creating the file and its directory when
// missing and bringing the schema up to date. A file that is not a SQLite
// database, belongs to another program or has a newer schema is refused
// with an error naming path.
func Open(path string, opts Options) (*Store, error) {
	if opts.RawRetention == 0 {
		opts.RawRetention = defaultRawRetention
	}
	if opts.RollupRetention == 0 {
		opts.RollupRetention = defaultRollupRetention
	}
	if opts.RawRetention < time.Hour {
		return nil, fmt.Errorf("monitor store %s: raw retention %s is under 1h", path, opts.RawRetention)
	}
	if opts.RollupRetention < opts.RawRetention {
		return nil, fmt.Errorf("monitor store %s: rollup retention %s is shorter than raw retention %s", path, opts.RollupRetention, opts.RawRetention)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("monitor store %s: %w", path, err)
		}
	}
	s := &Store{path: path, opts: opts, log: opts.Logger, ifaces: map[string]*iface{}, streams: map[streamKey]*stream{}, keys: map[sumKey]*entry{}}
	if err := s.open(); err != nil {
		s.closeDBs()
		return nil, fmt.Errorf("monitor store %s: %w", path, describe(err))
	}
	return s, nil
}

func (s *Store) open() error {
	// synchronous=NORMAL: in WAL mode a crash of the process loses nothing
	// committed; a power cut may lose the last commits, which for
	// statistics is an acceptable price for not syncing every batch.
	// WAL is set once the file is known to be ours (it is persistent, and
	// setting it would rewrite another program's file header).
	common := "_synchronous=NORMAL&_busy_timeout=10000&_foreign_keys=0"
	var err error
	s.wdb = sql.OpenDB(writeConnector{dsn(s.path, common+"&_txlock=immediate&_cache_size=-65536")})
	s.wdb.SetMaxOpenConns(1)
	s.wdb.SetConnMaxLifetime(0)
	s.wdb.SetConnMaxIdleTime(0)
	ctx := context.Background()
	version, err := identify(ctx, s.wdb)
	if err != nil {
		return err
	}
	var mode string
	if err := s.wdb.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
		return err
	}
	if mode != "wal" {
		return fmt.Errorf("journal mode is %q: WAL is not available for this file", mode)
	}
	if _, err := s.wdb.ExecContext(ctx, "PRAGMA temp_store=MEMORY; PRAGMA journal_size_limit=67108864"); err != nil {
		return err
	}
	if err := migrate(ctx, s.wdb, version, len(migrations)); err != nil {
		return err
	}
	if err := s.stmts.prepare(ctx, s.wdb); err != nil {
		return err
	}
	if err := s.wdb.QueryRowContext(ctx, "SELECT rolled_through FROM sum_rollup").Scan(&s.sumsRolled); err != nil {
		return err
	}
	s.rdb, err = sql.Open("sqlite3", dsn(s.path, common+"&_query_only=1&_cache_size=-16384"))
	if err != nil {
		return err
	}
	s.rdb.SetMaxOpenConns(4)
	return s.rdb.PingContext(ctx)
}

// writeConnector opens the write connection, with the SQL function that
// merges histograms (sqlHistogram) registered on it. No driver is
// registered with database/sql: the function is this store's alone.
type writeConnector struct{ dsn string }

func (c writeConnector) Connect(context.Context) (driver.Conn, error) { return c.Driver().Open(c.dsn) }

func (writeConnector) Driver() driver.Driver {
	return &sqlite3.SQLiteDriver{ConnectHook: func(conn *sqlite3.SQLiteConn) error {
		return conn.RegisterFunc("dubbo_histogram", sqlHistogram, true)
	}}
}

// sqlHistogram is dubbo_histogram(h, ...): the histograms h (Sparse
// blobs, NULL or empty for none; one may be several concatenated) merged
// into one compact blob, NULL when they hold no call.
func sqlHistogram(hs ...any) ([]byte, error) {
	var c histogram.Counts
	for _, h := range hs {
		b, _ := h.([]byte)
		if err := c.AddSparse(histogram.Sparse(b)); err != nil {
			return nil, err
		}
	}
	return []byte(c.Sparse()), nil // empty: NULL
}

// concatHistograms is the SQL aggregate of the histograms (Sparse blobs)
// of col concatenated, which is their sum; NULL when there are none.
// group_concat keeps a blob's bytes as they are (the database is UTF-8).
func concatHistograms(col string) string {
	return "CAST(group_concat(" + col + ", '') AS BLOB)"
}

// dsn makes a go-sqlite3 URI of path: escaped, so that a '?' or '#' in a
// file name is not read as the start of the options.
func dsn(path, params string) string {
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + params
}

// describe turns SQLite's terse errors about foreign or damaged files into
// ones that say what to do.
func describe(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrNotADB || se.Code == sqlite3.ErrCorrupt) {
		return fmt.Errorf("not a monitor database, or a corrupt one (move it away to start afresh): %w", err)
	}
	return err
}

// Close releases the database. Stop Run first.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stmts.close()
	return s.closeDBs()
}

func (s *Store) closeDBs() error {
	var errs []error
	for _, db := range []*sql.DB{s.rdb, s.wdb} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	return errors.Join(errs...)
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// RawRetention is how long rows are kept as reported (Options): older
// times hold hourly rows only, so a chart of them needs buckets of whole
// hours.
func (s *Store) RawRetention() time.Duration { return s.opts.RawRetention }

// Stats returns the counters since Open and the database's size now.
func (s *Store) Stats() Stats {
	s.statsMu.Lock()
	st := s.stats
	s.statsMu.Unlock()
	for _, p := range []string{s.path, s.path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			st.DBBytes += fi.Size()
		}
	}
	return st
}

func (s *Store) count(f func(*Stats)) {
	s.statsMu.Lock()
	f(&s.stats)
	s.statsMu.Unlock()
}
