package monitor

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dubbo-lab/dubbo/monitor/store"
)

// metrics is the monitor's own Prometheus collector: what it received,
// refused and stored, and what storing costs.
type metrics struct {
	store *store.Store
	coll  *Collector

	received, refused, failed                      *prometheus.Desc
	stored, duplicates, stale                      *prometheus.Desc
	insertSeconds, insertBatches, lastInsert       *prometheus.Desc
	rolledUp, expired, retainRuns, retainErrs, dbB *prometheus.Desc
}

func newMetrics(st *store.Store, c *Collector) *metrics {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("dubbo_monitor_"+name, help, nil, nil)
	}
	return &metrics{
		store: st, coll: c,
		received:      d("samples_received_total", "Statistics samples received (MonitorService.collect calls)"),
		refused:       d("samples_refused_total", "Samples refused because they could not be read or were invalid"),
		failed:        d("insert_failures_total", "Transactions that failed to store samples (their senders send them again)"),
		stored:        d("rows_stored_total", "Rows stored"),
		duplicates:    d("rows_duplicate_total", "Rows already stored (a sample sent again after a lost answer), ignored"),
		stale:         d("rows_stale_total", "Rows refused because their hour was already rolled up"),
		insertSeconds: d("insert_seconds_total", "Time spent storing rows"),
		insertBatches: d("insert_batches_total", "Transactions that stored rows"),
		lastInsert:    d("insert_last_seconds", "Time the last transaction took"),
		rolledUp:      d("rows_rolled_up_total", "Rows folded into hourly rows"),
		expired:       d("hourly_rows_expired_total", "Hourly rows deleted after the rollup retention"),
		retainRuns:    d("retention_runs_total", "Retention runs completed"),
		retainErrs:    d("retention_errors_total", "Retention runs that failed"),
		dbB:           d("db_bytes", "Size of the database and its write-ahead log"),
	}
}

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.received, m.refused, m.failed, m.stored, m.duplicates, m.stale,
		m.insertSeconds, m.insertBatches, m.lastInsert, m.rolledUp, m.expired, m.retainRuns, m.retainErrs, m.dbB} {
		ch <- d
	}
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	st := m.store.Stats()
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	counter(m.received, float64(m.coll.received.Load()))
	counter(m.refused, float64(m.coll.refused.Load()))
	counter(m.failed, float64(m.coll.failed.Load()))
	counter(m.stored, float64(st.RowsStored))
	counter(m.duplicates, float64(st.Duplicates))
	counter(m.stale, float64(st.Stale))
	counter(m.insertSeconds, st.InsertTime.Seconds())
	counter(m.insertBatches, float64(st.InsertBatches))
	gauge(m.lastInsert, st.LastInsertTime.Seconds())
	counter(m.rolledUp, float64(st.RolledUp))
	counter(m.expired, float64(st.HourlyExpired))
	counter(m.retainRuns, float64(st.RetainRuns))
	counter(m.retainErrs, float64(st.RetainErrors))
	gauge(m.dbB, float64(st.DBBytes))
}
