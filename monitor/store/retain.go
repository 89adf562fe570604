package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Run applies the retention (Retain) at once and then every interval (a
// minute when 0) until ctx ends. A failed run is logged and counted in
// Stats().RetainErrors; the next one tries again.
func (s *Store) Run(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = time.Minute
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := s.Retain(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("monitor store retention failed", "path", s.path, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Retain folds every complete hour of rows older than RawRetention into
// hourly rows, one per stream (sums of the counts and bytes, maxima of the
// max.* values, the average of the concurrency), and deletes hourly rows
// older than RollupRetention together with the streams no row is left of.
//
// Each hour is folded in one transaction that also deletes its rows and
// records that the hour is done, so a run interrupted anywhere leaves each
// hour either folded or untouched, never counted twice; a second run
// changes nothing. Inserts wait only for the hour being folded.
func (s *Store) Retain(ctx context.Context) error {
	now := s.opts.Now().Unix()
	cutoff := (now - int64(s.opts.RawRetention/time.Second)) / hour * hour
	horizon := now - int64(s.opts.RollupRetention/time.Second)
	var hours, rows int64
	err := func() error {
		for {
			n, done, err := s.rollOldestHour(ctx, cutoff)
			if err != nil || done {
				return err
			}
			hours++
			rows += n
		}
	}()
	var expired, forgotten int64
	if err == nil {
		expired, forgotten, err = s.expire(ctx, horizon)
	}
	s.count(func(st *Stats) {
		st.RolledUp += rows
		st.HourlyExpired += expired
		if err != nil {
			st.RetainErrors++
		} else {
			st.RetainRuns++
		}
	})
	if hours > 0 || expired > 0 {
		s.log.Info("monitor store retention", "path", s.path, "hours_rolled_up", hours, "rows_rolled_up", rows,
			"hourly_rows_expired", expired, "streams_forgotten", forgotten)
	}
	if err != nil {
		return fmt.Errorf("monitor store %s: retention: %w", s.path, err)
	}
	return nil
}

// rollOldestHour folds the hour of the oldest row if it ends by cutoff, and
// says how many rows it folded, or done when there is no such hour.
func (s *Store) rollOldestHour(ctx context.Context, cutoff int64) (rows int64, done bool, err error) {
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return 0, false, err
	}
	defer tx.Rollback()
	// The oldest row per interface is the first entry of its range of the
	// primary key; MIN over the whole table would scan it.
	var oldest sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT MIN((SELECT MIN(time) FROM raw WHERE interface_id = i.id)) FROM interfaces i`).Scan(&oldest); err != nil {
		return 0, false, fmt.Errorf("find the oldest row: %w", err)
	}
	if !oldest.Valid || hourEnd(oldest.Int64) > cutoff {
		return 0, true, nil
	}
	h := hourEnd(oldest.Int64)
	// Rows of the hour ending at h: time in (h-3600, h]. The INSERTs have
	// no ON CONFLICT: an hour is folded once, and a conflict would mean a
	// double count, so it fails the transaction instead.
	const span = `interface_id IN (SELECT id FROM interfaces) AND time > ?2 AND time <= ?1`
	steps := []struct {
		what, sql string
		n         *int64
	}{
		{"fold rows", `INSERT INTO hourly (interface_id, time, stream_id, success, failure, input, output, elapsed, max_elapsed, concurrent, max_concurrent, max_input, max_output)
			SELECT interface_id, ?1, stream_id, SUM(success), SUM(failure), SUM(input), SUM(output), SUM(elapsed),
				MAX(max_elapsed), AVG(concurrent), MAX(max_concurrent), MAX(max_input), MAX(max_output)
			FROM raw WHERE ` + span + ` GROUP BY interface_id, stream_id`, nil},
		{"fold sums", `INSERT INTO hour_sums (interface_id, time, side, method, success, failure, input, output, elapsed, max_elapsed, max_concurrent)
			SELECT interface_id, ?1, side, method, SUM(success), SUM(failure), SUM(input), SUM(output), SUM(elapsed), MAX(max_elapsed), MAX(max_concurrent)
			FROM minute_sums WHERE ` + span + ` GROUP BY interface_id, side, method`, nil},
		{"delete rows", `DELETE FROM raw WHERE ` + span, &rows},
		{"delete sums", `DELETE FROM minute_sums WHERE ` + span, nil},
	}
	for _, st := range steps {
		res, err := tx.ExecContext(ctx, st.sql, h, h-hour)
		if err != nil {
			return 0, false, fmt.Errorf("hour ending %s: %s: %w", time.Unix(h, 0).UTC().Format(time.RFC3339), st.what, err)
		}
		if st.n != nil {
			*st.n, _ = res.RowsAffected()
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta SET value = ? WHERE name = 'rolled_through'`, h); err != nil {
		return 0, false, fmt.Errorf("record the hour ending %d as folded: %w", h, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, false, err
	}
	s.rolledThrough = h
	return rows, false, nil
}

// expire deletes hourly rows and sums at or before horizon, then the
// streams and interfaces no row refers to any more.
func (s *Store) expire(ctx context.Context, horizon int64) (rows, streams int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, err
	}
	defer tx.Rollback()
	// A stream's rows all end by its last hour: once that hour is both
	// folded and expired, none is left.
	gone := min(horizon, s.rolledThrough)
	steps := []struct {
		what, sql string
		arg       any
		n         *int64
	}{
		{"hourly rows", `DELETE FROM hourly WHERE interface_id IN (SELECT id FROM interfaces) AND time <= ?`, horizon, &rows},
		{"hourly sums", `DELETE FROM hour_sums WHERE interface_id IN (SELECT id FROM interfaces) AND time <= ?`, horizon, nil},
		{"streams", `DELETE FROM streams WHERE last <= ?`, gone, &streams},
	}
	for _, st := range steps {
		res, err := tx.ExecContext(ctx, st.sql, st.arg)
		if err != nil {
			return 0, 0, fmt.Errorf("expire %s: %w", st.what, err)
		}
		if st.n != nil {
			*st.n, _ = res.RowsAffected()
		}
	}
	if streams > 0 {
		if _, err := tx.ExecContext(ctx, `DELETE FROM interfaces WHERE NOT EXISTS (SELECT 1 FROM streams WHERE interface_id = interfaces.id)`); err != nil {
			return 0, 0, fmt.Errorf("expire interfaces: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, 0, err
	}
	if streams > 0 {
		for k, st := range s.streams {
			if st.last <= gone {
				delete(s.streams, k)
			}
		}
		clear(s.ifaces) // some may be gone; the rest are found again
	}
	return rows, streams, nil
}
