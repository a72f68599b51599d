/* callstats.c - backend call counts and latencies (see callstats.h). */
#include "callstats.h"

#include "../lib/sbuf.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* clusters x ops seen; beyond that, calls are counted under cluster "other" */
#define MAX_SERIES 128
#define CLUSTER_NAME_LEN 64
static const double buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
#define NBUCKETS (sizeof buckets / sizeof buckets[0])

struct series {
    char cluster[CLUSTER_NAME_LEN];
    const char *op;
    unsigned long ok, failed;
    unsigned long bucket[NBUCKETS]; /* not cumulative: rendering adds up */
    double sum;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct series table[MAX_SERIES];
static size_t nseries;

struct timespec callstats_start(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t;
}

static struct series *find(const char *cluster, const char *op)
{
    for (size_t i = 0; i < nseries; i++)
        if (table[i].op == op && strcmp(table[i].cluster, cluster) == 0)
            return &table[i];
    if (nseries == MAX_SERIES - 1 && strcmp(cluster, "other") != 0)
        return find("other", op);
    if (nseries == MAX_SERIES)
        return NULL;
    struct series *s = &table[nseries++];
    snprintf(s->cluster, sizeof s->cluster, "%s", cluster);
    s->op = op;
    return s;
}

void callstats_done(struct timespec t0, const char *cluster, const char *op, bool ok)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    pthread_mutex_lock(&mu);
    struct series *s = find(cluster && cluster[0] ? cluster : "unknown", op);
    if (s) {
        if (ok)
            s->ok++;
        else
            s->failed++;
        s->sum += secs;
        for (size_t b = 0; b < NBUCKETS; b++) {
            if (secs <= buckets[b]) {
                s->bucket[b]++;
                break;
            }
        }
    }
    pthread_mutex_unlock(&mu);
}

void callstats_render(struct sbuf *sb)
{
    sbuf_puts(sb, "# HELP aidc_backend_calls_total Calls to clusters, by result.\n"
                  "# TYPE aidc_backend_calls_total counter\n");
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < nseries; i++) {
        const struct series *s = &table[i];
        /* cluster names are [a-z0-9-] (checked at registration): no escaping needed */
        sbuf_printf(sb, "aidc_backend_calls_total{cluster=\"%s\",op=\"%s\",result=\"ok\"} %lu\n",
                    s->cluster, s->op, s->ok);
        sbuf_printf(sb,
                    "aidc_backend_calls_total{cluster=\"%s\",op=\"%s\",result=\"error\"} %lu\n",
                    s->cluster, s->op, s->failed);
    }
    sbuf_puts(sb, "# HELP aidc_backend_call_duration_seconds Time a call to a cluster took.\n"
                  "# TYPE aidc_backend_call_duration_seconds histogram\n");
    for (size_t i = 0; i < nseries; i++) {
        const struct series *s = &table[i];
        unsigned long cum = 0;
        for (size_t b = 0; b < NBUCKETS; b++) {
            cum += s->bucket[b];
            sbuf_printf(sb,
                        "aidc_backend_call_duration_seconds_bucket{cluster=\"%s\",op=\"%s\","
                        "le=\"%g\"} %lu\n",
                        s->cluster, s->op, buckets[b], cum);
        }
        sbuf_printf(sb,
                    "aidc_backend_call_duration_seconds_bucket{cluster=\"%s\",op=\"%s\","
                    "le=\"+Inf\"} %lu\n"
                    "aidc_backend_call_duration_seconds_sum{cluster=\"%s\",op=\"%s\"} %.6f\n"
                    "aidc_backend_call_duration_seconds_count{cluster=\"%s\",op=\"%s\"} %lu\n",
                    s->cluster, s->op, s->ok + s->failed, s->cluster, s->op, s->sum, s->cluster,
                    s->op, s->ok + s->failed);
    }
    pthread_mutex_unlock(&mu);
}
