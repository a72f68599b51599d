/* schedstats.c - worker counters (see schedstats.h). */
#include "schedstats.h"

#include "../server/sbuf.h"

#include <stdatomic.h>

static atomic_ulong passes, last_pass_us, queued, admitted, preempted, delivered, failed, syncs;

void schedstats_admission(double ms, size_t nqueued, size_t nadmitted, size_t npreempted)
{
    atomic_fetch_add(&passes, 1);
    atomic_store(&last_pass_us, (unsigned long)(ms * 1000.0));
    atomic_store(&queued, (unsigned long)nqueued);
    atomic_fetch_add(&admitted, (unsigned long)nadmitted);
    atomic_fetch_add(&preempted, (unsigned long)npreempted);
}

void schedstats_delivery(bool ok)
{
    atomic_fetch_add(ok ? &delivered : &failed, 1);
}

void schedstats_sync(void)
{
    atomic_fetch_add(&syncs, 1);
}

void schedstats_render(struct sbuf *sb)
{
    sbuf_printf(sb,
                "# HELP aidc_admission_passes_total Admission passes run by this process.\n"
                "# TYPE aidc_admission_passes_total counter\n"
                "aidc_admission_passes_total %lu\n"
                "# HELP aidc_admission_last_pass_seconds Duration of the last admission pass.\n"
                "# TYPE aidc_admission_last_pass_seconds gauge\n"
                "aidc_admission_last_pass_seconds %.6f\n"
                "# HELP aidc_jobs_queued Jobs waiting at the last admission pass.\n"
                "# TYPE aidc_jobs_queued gauge\n"
                "aidc_jobs_queued %lu\n"
                "# HELP aidc_jobs_admitted_total Jobs admitted by this process.\n"
                "# TYPE aidc_jobs_admitted_total counter\n"
                "aidc_jobs_admitted_total %lu\n"
                "# HELP aidc_preemptions_total Preemptions requested by this process.\n"
                "# TYPE aidc_preemptions_total counter\n"
                "aidc_preemptions_total %lu\n"
                "# HELP aidc_outbox_deliveries_total Deliveries to clusters, by result.\n"
                "# TYPE aidc_outbox_deliveries_total counter\n"
                "aidc_outbox_deliveries_total{result=\"ok\"} %lu\n"
                "aidc_outbox_deliveries_total{result=\"failed\"} %lu\n"
                "# HELP aidc_sync_rounds_total Syncer rounds run by this process.\n"
                "# TYPE aidc_sync_rounds_total counter\n"
                "aidc_sync_rounds_total %lu\n",
                atomic_load(&passes), (double)atomic_load(&last_pass_us) / 1e6,
                atomic_load(&queued), atomic_load(&admitted), atomic_load(&preempted),
                atomic_load(&delivered), atomic_load(&failed), atomic_load(&syncs));
}
