package store

import (
	"context"
	"database/sql"
	"fmt"
)

// applicationID marks a SQLite file as a monitor store (PRAGMA
// application_id), so that Open refuses another program's database instead
// of adding tables to it.
const applicationID = 0x4455424d // "DUBM"

// migrations are the schema's versions in order: migrations[i] takes a
// database from version i (PRAGMA user_version) to i+1, in one transaction.
// Append new steps; never edit a released one.
var migrations = []string{
	// 1: the rows. A stream is what one node reports for one method towards
	// one peer; its rows are one per interval. Rows are clustered by
	// interface and time, so a batch appends at one place per interface and
	// a query for one service reads one range.
	`CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
	INSERT INTO meta (name, value) VALUES ('rolled_through', 0);
	CREATE TABLE interfaces (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
	CREATE TABLE streams (
		id INTEGER PRIMARY KEY,
		interface_id INTEGER NOT NULL,
		side TEXT NOT NULL,
		method TEXT NOT NULL,
		node TEXT NOT NULL,
		grp TEXT NOT NULL,
		version TEXT NOT NULL,
		address TEXT NOT NULL,
		consumer TEXT NOT NULL,
		application TEXT NOT NULL,
		last INTEGER NOT NULL, -- end of the hour of its newest row: retention forgets the stream after it
		UNIQUE (interface_id, side, method, node, grp, version, address, consumer)
	);
	CREATE TABLE raw (
		interface_id INTEGER NOT NULL,
		time INTEGER NOT NULL,
		stream_id INTEGER NOT NULL,
		interval INTEGER NOT NULL,
		success INTEGER NOT NULL,
		failure INTEGER NOT NULL,
		input INTEGER NOT NULL,
		output INTEGER NOT NULL,
		elapsed INTEGER NOT NULL,
		max_elapsed INTEGER NOT NULL,
		concurrent REAL NOT NULL,
		max_concurrent INTEGER NOT NULL,
		max_input INTEGER NOT NULL,
		max_output INTEGER NOT NULL,
		PRIMARY KEY (interface_id, time, stream_id)
	) WITHOUT ROWID;
	CREATE TABLE hourly (
		interface_id INTEGER NOT NULL,
		time INTEGER NOT NULL,
		stream_id INTEGER NOT NULL,
		success INTEGER NOT NULL,
		failure INTEGER NOT NULL,
		input INTEGER NOT NULL,
		output INTEGER NOT NULL,
		elapsed INTEGER NOT NULL,
		max_elapsed INTEGER NOT NULL,
		concurrent REAL NOT NULL,
		max_concurrent INTEGER NOT NULL,
		max_input INTEGER NOT NULL,
		max_output INTEGER NOT NULL,
		PRIMARY KEY (interface_id, time, stream_id)
	) WITHOUT ROWID;`,

	// 2: per-interface sums for the console's charts, per minute beside raw
	// and per hour beside hourly, filled from the rows already stored.
	`CREATE TABLE minute_sums (
		interface_id INTEGER NOT NULL,
		time INTEGER NOT NULL,
		side TEXT NOT NULL,
		method TEXT NOT NULL,
		success INTEGER NOT NULL,
		failure INTEGER NOT NULL,
		input INTEGER NOT NULL,
		output INTEGER NOT NULL,
		elapsed INTEGER NOT NULL,
		max_elapsed INTEGER NOT NULL,
		max_concurrent INTEGER NOT NULL,
		PRIMARY KEY (interface_id, time, side, method)
	) WITHOUT ROWID;
	CREATE TABLE hour_sums (
		interface_id INTEGER NOT NULL,
		time INTEGER NOT NULL,
		side TEXT NOT NULL,
		method TEXT NOT NULL,
		success INTEGER NOT NULL,
		failure INTEGER NOT NULL,
		input INTEGER NOT NULL,
		output INTEGER NOT NULL,
		elapsed INTEGER NOT NULL,
		max_elapsed INTEGER NOT NULL,
		max_concurrent INTEGER NOT NULL,
		PRIMARY KEY (interface_id, time, side, method)
	) WITHOUT ROWID;
	INSERT INTO minute_sums
		SELECT r.interface_id, (r.time + 59) / 60 * 60 AS minute, s.side, s.method,
			SUM(r.success), SUM(r.failure), SUM(r.input), SUM(r.output), SUM(r.elapsed), MAX(r.max_elapsed), MAX(r.max_concurrent)
		FROM raw r JOIN streams s ON s.id = r.stream_id
		GROUP BY r.interface_id, minute, s.side, s.method;
	INSERT INTO hour_sums
		SELECT h.interface_id, h.time, s.side, s.method,
			SUM(h.success), SUM(h.failure), SUM(h.input), SUM(h.output), SUM(h.elapsed), MAX(h.max_elapsed), MAX(h.max_concurrent)
		FROM hourly h JOIN streams s ON s.id = h.stream_id
		GROUP BY h.interface_id, h.time, s.side, s.method;`,

	// 3: hours are folded per interface, so that an insert waits for one
	// interface's hour at most: the rolled-through mark moves from meta to
	// each interface.
	`ALTER TABLE interfaces ADD COLUMN rolled_through INTEGER NOT NULL DEFAULT 0;
	UPDATE interfaces SET rolled_through = (SELECT value FROM meta WHERE name = 'rolled_through');
	DROP TABLE meta;`,

	// 4: response-time histograms beside the rows (NULL from reporters
	// that send none); and sums of the rows per minute, hour and day at
	// six levels of detail (sums.go), kept by Insert, in place of
	// minute_sums and hour_sums. A sum's key (sum_keys) is an id, as a
	// stream's is: levels 1 (provider: side, address) and 2 (consumer:
	// side, consumer) add up every interface's rows (interface_id 0), 3
	// (service: side, version, grp), 4 (method: ... method), 5
	// (application: ... application) and 6 (peer: ... address, consumer)
	// each interface's apart; columns a level has not are ''. Sums are
	// clustered by level, span and time, so that a batch writes at a few
	// places and a read of every service is one range. Minute sums up to
	// sum_rollup.rolled_through are answered by their hour's. The sums
	// are filled from the rows already stored (without histograms: the
	// rows had none).
	`ALTER TABLE raw ADD COLUMN histogram BLOB;
	ALTER TABLE hourly ADD COLUMN histogram BLOB;
	CREATE TABLE sum_keys (
		id INTEGER PRIMARY KEY,
		level INTEGER NOT NULL,
		interface_id INTEGER NOT NULL,
		side TEXT NOT NULL, version TEXT NOT NULL, grp TEXT NOT NULL, method TEXT NOT NULL,
		application TEXT NOT NULL, address TEXT NOT NULL, consumer TEXT NOT NULL,
		last INTEGER NOT NULL, -- end of the hour of its newest row: retention forgets the key after it
		UNIQUE (level, interface_id, side, version, grp, method, application, address, consumer)
	);
	CREATE TABLE sums (
		level INTEGER NOT NULL,
		interface_id INTEGER NOT NULL,
		span INTEGER NOT NULL,
		time INTEGER NOT NULL,
		key_id INTEGER NOT NULL,
		success INTEGER NOT NULL,
		failure INTEGER NOT NULL,
		input INTEGER NOT NULL,
		output INTEGER NOT NULL,
		elapsed INTEGER NOT NULL,
		max_elapsed INTEGER NOT NULL,
		max_concurrent INTEGER NOT NULL,
		last INTEGER NOT NULL,
		application TEXT, -- the rows' application when they all have the same, else NULL
		histogram BLOB,
		PRIMARY KEY (level, span, time, interface_id, key_id)
	) WITHOUT ROWID;
	CREATE TABLE sum_rollup (rolled_through INTEGER NOT NULL);
	INSERT INTO sum_rollup SELECT COALESCE(MAX(rolled_through), 0) FROM interfaces;
	CREATE TEMP TABLE migrate_keys AS
		WITH l (level, across, version, grp, method, application, address, consumer) AS (VALUES
			(1, 1, 0, 0, 0, 0, 1, 0), (2, 1, 0, 0, 0, 0, 0, 1), (3, 0, 1, 1, 0, 0, 0, 0),
			(4, 0, 1, 1, 1, 0, 0, 0), (5, 0, 1, 1, 0, 1, 0, 0), (6, 0, 1, 1, 0, 0, 1, 1))
		SELECT s.id AS stream_id, s.application AS stream_application, s.last, l.level,
			CASE WHEN l.across THEN 0 ELSE s.interface_id END AS interface_id, s.side,
			CASE WHEN l.version THEN s.version ELSE '' END AS version, CASE WHEN l.grp THEN s.grp ELSE '' END AS grp,
			CASE WHEN l.method THEN s.method ELSE '' END AS method, CASE WHEN l.application THEN s.application ELSE '' END AS application,
			CASE WHEN l.address THEN s.address ELSE '' END AS address, CASE WHEN l.consumer THEN s.consumer ELSE '' END AS consumer
		FROM streams s, l;
	INSERT INTO sum_keys (level, interface_id, side, version, grp, method, application, address, consumer, last)
		SELECT level, interface_id, side, version, grp, method, application, address, consumer, MAX(last) FROM migrate_keys
		GROUP BY level, interface_id, side, version, grp, method, application, address, consumer;
	CREATE TEMP TABLE migrate_map (stream_id INTEGER, level INTEGER, interface_id INTEGER, key_id INTEGER, application TEXT,
		PRIMARY KEY (stream_id, level)) WITHOUT ROWID;
	INSERT INTO migrate_map SELECT m.stream_id, m.level, m.interface_id, k.id, m.stream_application
		FROM migrate_keys m JOIN sum_keys k USING (level, interface_id, side, version, grp, method, application, address, consumer);
	INSERT INTO sums (level, interface_id, span, time, key_id, success, failure, input, output, elapsed, max_elapsed, max_concurrent, last, application)
		SELECT m.level, m.interface_id, 60, (r.time + 59) / 60 * 60 AS t, m.key_id,
			SUM(r.success), SUM(r.failure), SUM(r.input), SUM(r.output), SUM(r.elapsed), MAX(r.max_elapsed), MAX(r.max_concurrent), MAX(r.time),
			CASE WHEN MIN(m.application) = MAX(m.application) THEN MIN(m.application) END
		FROM raw r JOIN migrate_map m ON m.stream_id = r.stream_id
		WHERE r.time > (SELECT rolled_through FROM sum_rollup)
		GROUP BY m.level, m.interface_id, t, m.key_id;
	INSERT INTO sums (level, interface_id, span, time, key_id, success, failure, input, output, elapsed, max_elapsed, max_concurrent, last, application)
		SELECT m.level, m.interface_id, p.span, (r.time + p.span - 1) / p.span * p.span AS t, m.key_id,
			SUM(r.success), SUM(r.failure), SUM(r.input), SUM(r.output), SUM(r.elapsed), MAX(r.max_elapsed), MAX(r.max_concurrent), MAX(r.time),
			CASE WHEN MIN(m.application) = MAX(m.application) THEN MIN(m.application) END
		FROM (SELECT stream_id, time, success, failure, input, output, elapsed, max_elapsed, max_concurrent FROM raw
			UNION ALL SELECT stream_id, time, success, failure, input, output, elapsed, max_elapsed, max_concurrent FROM hourly) r
		JOIN migrate_map m ON m.stream_id = r.stream_id
		JOIN (SELECT 3600 AS span UNION ALL SELECT 86400) p
		GROUP BY m.level, m.interface_id, p.span, t, m.key_id;
	DROP TABLE migrate_keys;
	DROP TABLE migrate_map;
	DROP TABLE minute_sums;
	DROP TABLE hour_sums;`,

	// 5: the console's rule changes (audit.go).
	auditMigration,
}

// identify returns the schema version of db, refusing a database that is
// not a monitor store. It writes nothing.
func identify(ctx context.Context, db *sql.DB) (int, error) {
	var appID, version int
	if err := db.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
		return 0, err
	}
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return 0, err
	}
	if appID != applicationID {
		if appID != 0 {
			return 0, fmt.Errorf("not a monitor database: it belongs to another program (application_id %#x)", appID)
		}
		var tables int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&tables); err != nil {
			return 0, err
		}
		if tables > 0 || version != 0 {
			return 0, fmt.Errorf("not a monitor database: it holds %d tables of another program", tables)
		}
	}
	if version > len(migrations) {
		return 0, fmt.Errorf("%w: schema version %d, this program knows up to %d; use the dubbo that wrote it or another file", ErrNewerSchema, version, len(migrations))
	}
	return version, nil
}

// migrateTo brings db to schema version target (tests stop short of the
// latest to make an old database).
func migrateTo(ctx context.Context, db *sql.DB, target int) error {
	version, err := identify(ctx, db)
	if err != nil {
		return err
	}
	return migrate(ctx, db, version, target)
}

// migrate applies the steps from version to target, each once, each in its
// own transaction together with the version it reaches.
func migrate(ctx context.Context, db *sql.DB, version, target int) error {
	for v := version; v < target; v++ {
		if err := migrateStep(ctx, db, v); err != nil {
			return fmt.Errorf("migrate schema to version %d: %w", v+1, err)
		}
	}
	return nil
}

func migrateStep(ctx context.Context, db *sql.DB, from int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, migrations[from]); err != nil {
		return err
	}
	// PRAGMA takes no bound parameters; both values are ours.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d; PRAGMA application_id = %d", from+1, applicationID)); err != nil {
		return err
	}
	return tx.Commit()
}
