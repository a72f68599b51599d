/* schedstats.c - worker counters (see schedstats.h). */
#include "schedstats.h"

#include "../lib/sbuf.h"

#include <stdatomic.h>

static atomic_ulong passes, last_pass_us, admitted, borrowed, preempted, delivered, failed, syncs;

void schedstats_admission(double ms, size_t nadmitted, size_t nborrowed, size_t npreempted)
{
    atomic_fetch_add(&passes, 1);
    atomic_store(&last_pass_us, (unsigned long)(ms * 1000.0));
    atomic_fetch_add(&admitted, (unsigned long)nadmitted);
    atomic_fetch_add(&borrowed, (unsigned long)nborrowed);
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
    unsigned long adm = atomic_load(&admitted), bor = atomic_load(&borrowed);
    if (bor > adm) /* read between the two additions of a pass */
        bor = adm;
    sbuf_printf(sb,
                "# HELP aidc_admission_passes_total Admission passes run by this process.\n"
                "# TYPE aidc_admission_passes_total counter\n"
                "aidc_admission_passes_total %lu\n"
                "# HELP aidc_admission_last_pass_seconds Duration of the last admission pass.\n"
                "# TYPE aidc_admission_last_pass_seconds gauge\n"
                "aidc_admission_last_pass_seconds %.6f\n"
                "# HELP aidc_jobs_admitted_total Jobs admitted by this process.\n"
                "# TYPE aidc_jobs_admitted_total counter\n"
                "aidc_jobs_admitted_total %lu\n"
                "# HELP aidc_admission_decisions_total Admission decisions written by this "
                "process: admit (within the guarantee), borrow (beyond it, preemptible), preempt.\n"
                "# TYPE aidc_admission_decisions_total counter\n"
                "aidc_admission_decisions_total{decision=\"admit\"} %lu\n"
                "aidc_admission_decisions_total{decision=\"borrow\"} %lu\n"
                "aidc_admission_decisions_total{decision=\"preempt\"} %lu\n"
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
                adm, adm - bor, bor, atomic_load(&preempted), atomic_load(&preempted),
                atomic_load(&delivered), atomic_load(&failed), atomic_load(&syncs));
}
