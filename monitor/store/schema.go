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
	// that send none); and sums per minute, hour and day of every row,
	// kept by Insert, in three tables of increasing detail: per service
	// (side, version, group, reporting application), per method, and per
	// provider and consumer address. They replace minute_sums and
	// hour_sums, and are filled from the rows already stored (without
	// histograms: the rows had none).
	`ALTER TABLE raw ADD COLUMN histogram BLOB;
	ALTER TABLE hourly ADD COLUMN histogram BLOB;
	CREATE TABLE service_sums (
		interface_id INTEGER NOT NULL,
		span INTEGER NOT NULL,
		time INTEGER NOT NULL,
		side TEXT NOT NULL, version TEXT NOT NULL, grp TEXT NOT NULL, application TEXT NOT NULL,
		success INTEGER NOT NULL,
		failure INTEGER NOT NULL,
		input INTEGER NOT NULL,
		output INTEGER NOT NULL,
		elapsed INTEGER NOT NULL,
		max_elapsed INTEGER NOT NULL,
		max_concurrent INTEGER NOT NULL,
		last INTEGER NOT NULL,
		histogram BLOB,
		PRIMARY KEY (interface_id, span, time, side, version, grp, application)
	) WITHOUT ROWID;
	CREATE TABLE method_sums (
		interface_id INTEGER NOT NULL,
		span INTEGER NOT NULL,
		time INTEGER NOT NULL,
		side TEXT NOT NULL, method TEXT NOT NULL, version TEXT NOT NULL, grp TEXT NOT NULL, application TEXT NOT NULL,
		success INTEGER NOT NULL,
		failure INTEGER NOT NULL,
		input INTEGER NOT NULL,
		output INTEGER NOT NULL,
		elapsed INTEGER NOT NULL,
		max_elapsed INTEGER NOT NULL,
		max_concurrent INTEGER NOT NULL,
		last INTEGER NOT NULL,
		histogram BLOB,
		PRIMARY KEY (interface_id, span, time, side, method, version, grp, application)
	) WITHOUT ROWID;
	CREATE TABLE peer_sums (
		interface_id INTEGER NOT NULL,
		span INTEGER NOT NULL,
		time INTEGER NOT NULL,
		side TEXT NOT NULL, version TEXT NOT NULL, grp TEXT NOT NULL, application TEXT NOT NULL, address TEXT NOT NULL, consumer TEXT NOT NULL,
		success INTEGER NOT NULL,
		failure INTEGER NOT NULL,
		input INTEGER NOT NULL,
		output INTEGER NOT NULL,
		elapsed INTEGER NOT NULL,
		max_elapsed INTEGER NOT NULL,
		max_concurrent INTEGER NOT NULL,
		last INTEGER NOT NULL,
		histogram BLOB,
		PRIMARY KEY (interface_id, span, time, side, version, grp, application, address, consumer)
	) WITHOUT ROWID;
	INSERT INTO service_sums (interface_id, span, time, side, version, grp, application, success, failure, input, output, elapsed, max_elapsed, max_concurrent, last)
		SELECT r.interface_id, 60, (r.time + 59) / 60 * 60 AS t, s.side, s.version, s.grp, s.application,
			SUM(r.success), SUM(r.failure), SUM(r.input), SUM(r.output), SUM(r.elapsed), MAX(r.max_elapsed), MAX(r.max_concurrent), MAX(r.time)
		FROM raw r JOIN streams s ON s.id = r.stream_id
		GROUP BY r.interface_id, t, s.side, s.version, s.grp, s.application;
	INSERT INTO service_sums (interface_id, span, time, side, version, grp, application, success, failure, input, output, elapsed, max_elapsed, max_concurrent, last)
		SELECT r.interface_id, 3600, (r.time + 3599) / 3600 * 3600 AS t, s.side, s.version, s.grp, s.application,
			SUM(r.success), SUM(r.failure), SUM(r.input), SUM(r.output), SUM(r.elapsed), MAX(r.max_elapsed), MAX(r.max_concurrent), MAX(r.time)
		FROM (SELECT interface_id, time, stream_id, success, failure, input, output, elapsed, max_elapsed, max_concurrent FROM raw UNION ALL SELECT interface_id, time, stream_id, success, failure, input, output, elapsed, max_elapsed, max_concurrent FROM hourly) r JOIN streams s ON s.id = r.stream_id
		GROUP BY r.interface_id, t, s.side, s.version, s.grp, s.application;
	INSERT INTO service_sums (interface_id, span, time, side, version, grp, application, success, failure, input, output, elapsed, max_elapsed, max_concurrent, last)
		SELECT r.interface_id, 86400, (r.time + 86399) / 86400 * 86400 AS t, s.side, s.version, s.grp, s.application,
			SUM(r.success), SUM(r.failure), SUM(r.input), SUM(r.output), SUM(r.elapsed), MAX(r.max_elapsed), MAX(r.max_concurrent), MAX(r.time)
		FROM (SELECT interface_id, time, stream_id, success, failure, input, output, elapsed, max_elapsed, max_concurrent FROM raw UNION ALL SELECT interface_id, time, stream_id, success, failure, input, output, elapsed, max_elapsed, max_concurrent FROM hourly) r JOIN streams s ON s.id = r.stream_id
		GROUP BY r.interface_id, t, s.side, s.version, s.grp, s.application;
	INSERT INTO method_sums (interface_id, span, time, side, method, version, grp, application, success, failure, input, output, elapsed, max_elapsed, max_concurrent, last)
		SELECT r.interface_id, 60, (r.time + 59) / 60 * 60 AS t, s.side, s.method, s.version, s.grp, s.application,
			SUM(r.success), SUM(r.failure), SUM(r.input), SUM(r.output), SUM(r.elapsed), MAX(r.max_elapsed), MAX(r.max_concurrent), MAX(r.time)
		FROM raw r JOIN streams s ON s.id = r.stream_id
		GROUP BY r.interface_id, t, s.side, s.method, s.version, s.grp, s.application;
	INSERT INTO method_sums (interface_id, span, time, side, method, version, grp, application, success, failure, input, output, elapsed, max_elapsed, max_concurrent, last)
		SELECT r.interface_id, 3600, (r.time + 3599) / 3600 * 3600 AS t, s.side, s.method, s.version, s.grp, s.application,
			SUM(r.success), SUM(r.failure), SUM(r.input), SUM(r.output), SUM(r.elapsed), MAX(r.max_elapsed), MAX(r.max_concurrent), MAX(r.time)
		FROM (SELECT interface_id, time, stream_id, success, failure, input, output, elapsed, max_elapsed, max_concurrent FROM raw UNION ALL SELECT interface_id, time, stream_id, success, failure, input, output, elapsed, max_elapsed, max_concurrent FROM hourly) r JOIN streams s ON s.id = r.stream_id
		GROUP BY r.interface_id, t, s.side, s.method, s.version, s.grp, s.application;
	INSERT INTO method_sums (interface_id, span, time, side, method, version, grp, application, success, failure, input, output, elapsed, max_elapsed, max_concurrent, last)
		SELECT r.interface_id, 86400, (r.time + 86399) / 86400 * 86400 AS t, s.side, s.method, s.version, s.grp, s.application,
			SUM(r.success), SUM(r.failure), SUM(r.input), SUM(r.output), SUM(r.elapsed), MAX(r.max_elapsed), MAX(r.max_concurrent), MAX(r.time)
		FROM (SELECT interface_id, time, stream_id, success, failure, input, output, elapsed, max_elapsed, max_concurrent FROM raw UNION ALL SELECT interface_id, time, stream_id, success, failure, input, output, elapsed, max_elapsed, max_concurrent FROM hourly) r JOIN streams s ON s.id = r.stream_id
		GROUP BY r.interface_id, t, s.side, s.method, s.version, s.grp, s.application;
	INSERT INTO peer_sums (interface_id, span, time, side, version, grp, application, address, consumer, success, failure, input, output, elapsed, max_elapsed, max_concurrent, last)
		SELECT r.interface_id, 60, (r.time + 59) / 60 * 60 AS t, s.side, s.version, s.grp, s.application, s.address, s.consumer,
			SUM(r.success), SUM(r.failure), SUM(r.input), SUM(r.output), SUM(r.elapsed), MAX(r.max_elapsed), MAX(r.max_concurrent), MAX(r.time)
		FROM raw r JOIN streams s ON s.id = r.stream_id
		GROUP BY r.interface_id, t, s.side, s.version, s.grp, s.application, s.address, s.consumer;
	INSERT INTO peer_sums (interface_id, span, time, side, version, grp, application, address, consumer, success, failure, input, output, elapsed, max_elapsed, max_concurrent, last)
		SELECT r.interface_id, 3600, (r.time + 3599) / 3600 * 3600 AS t, s.side, s.version, s.grp, s.application, s.address, s.consumer,
			SUM(r.success), SUM(r.failure), SUM(r.input), SUM(r.output), SUM(r.elapsed), MAX(r.max_elapsed), MAX(r.max_concurrent), MAX(r.time)
		FROM (SELECT interface_id, time, stream_id, success, failure, input, output, elapsed, max_elapsed, max_concurrent FROM raw UNION ALL SELECT interface_id, time, stream_id, success, failure, input, output, elapsed, max_elapsed, max_concurrent FROM hourly) r JOIN streams s ON s.id = r.stream_id
		GROUP BY r.interface_id, t, s.side, s.version, s.grp, s.application, s.address, s.consumer;
	INSERT INTO peer_sums (interface_id, span, time, side, version, grp, application, address, consumer, success, failure, input, output, elapsed, max_elapsed, max_concurrent, last)
		SELECT r.interface_id, 86400, (r.time + 86399) / 86400 * 86400 AS t, s.side, s.version, s.grp, s.application, s.address, s.consumer,
			SUM(r.success), SUM(r.failure), SUM(r.input), SUM(r.output), SUM(r.elapsed), MAX(r.max_elapsed), MAX(r.max_concurrent), MAX(r.time)
		FROM (SELECT interface_id, time, stream_id, success, failure, input, output, elapsed, max_elapsed, max_concurrent FROM raw UNION ALL SELECT interface_id, time, stream_id, success, failure, input, output, elapsed, max_elapsed, max_concurrent FROM hourly) r JOIN streams s ON s.id = r.stream_id
		GROUP BY r.interface_id, t, s.side, s.version, s.grp, s.application, s.address, s.consumer;
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
