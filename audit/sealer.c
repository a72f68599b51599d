/* sealer.c - the audit sealer worker (see sealer.h). */
#include "sealer.h"

#include "../db/auditseal.h"
#include "../db/worker.h"
#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"
#include "chain.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH 2000

/* figures for /metrics, of whichever sealer of this process ran last */
static atomic_ulong sealed_total, checkpoints_total;
#define HOUSEKEEPING_S 3600
#define RETENTION_S 86400

struct sealer {
    const struct config *cfg;
    const struct sign_key *key;
    time_t housekept, retained; /* owned by the worker thread */
};

static const struct db_ctx system_ctx = {.roles = "system"};

/* Hash rows from position head+1 on; fill the three array literals. */
static int hash_rows(const struct db_audit_unsealed_rows *r, long long head,
                     const unsigned char head_hash[32], struct sbuf *ids, struct sbuf *tss,
                     struct sbuf *hashes)
{
    unsigned char prev[CHAIN_HASH_LEN], h[CHAIN_HASH_LEN];
    memcpy(prev, head_hash, sizeof prev);
    sbuf_putc(ids, '{');
    sbuf_putc(tss, '{');
    sbuf_putc(hashes, '{');
    for (size_t i = 0; i < r->n; i++) {
        const struct db_audit_unsealed_row *row = &r->v[i];
        json_error_t jerr;
        json_t *ev = json_loads(row->json, 0, &jerr);
        if (!ev || json_object_set_new(ev, "seq", json_integer(head + 1 + (long long)i)) != 0 ||
            chain_link(prev, ev, h) != 0) {
            log_error("audit sealer: event %lld cannot be encoded: %s", row->id,
                      ev ? "hashing failed" : jerr.text);
            json_decref(ev);
            return AIDC_EINTERNAL;
        }
        json_decref(ev);
        char hex[CHAIN_HEX_LEN + 1];
        chain_hex(h, hex);
        sbuf_printf(ids, "%s%lld", i ? "," : "", row->id);
        sbuf_printf(tss, "%s\"%s\"", i ? "," : "", row->ts);
        sbuf_printf(hashes, "%s\"\\\\x%s\"", i ? "," : "", hex);
        memcpy(prev, h, sizeof prev);
    }
    sbuf_putc(ids, '}');
    sbuf_putc(tss, '}');
    sbuf_putc(hashes, '}');
    return 0;
}

/*
 * The inbox into audit_events, committed on its own: an event the chain
 * cannot take (and so a rolled-back seal) must not keep the inbox from
 * emptying, or every search would read a growing inbox.
 */
static int move_inbox(struct db *db)
{
    long long moved = 0;
    int e = db_begin(db, &system_ctx, false);
    if (!e)
        e = db_audit_inbox_move(db, &moved);
    if (e) {
        db_rollback(db);
        return e;
    }
    return db_commit(db);
}

int sealer_seal(struct db *db, int grace_ms, int max)
{
    char grace[16];
    snprintf(grace, sizeof grace, "%d", grace_ms);
    char frontier[48];
    /* alone, before the transaction: its snapshot must come after this look */
    int e = db_audit_frontier(db, grace, frontier, sizeof frontier);
    if (!e)
        e = move_inbox(db);
    if (!e)
        e = db_begin(db, &system_ctx, false);
    if (e)
        return e;
    struct db_audit_head head;
    unsigned char head_hash[CHAIN_HASH_LEN];
    struct db_audit_unsealed_rows r = {0};
    struct sbuf ids = SBUF_INIT, tss = SBUF_INIT, hashes = SBUF_INIT;
    e = db_audit_head(db, &head);
    if (!e && !chain_unhex(head.hash, head_hash))
        e = AIDC_EINTERNAL;
    if (!e)
        e = db_audit_unsealed(db, &head, frontier, max, &r);
    int n = (int)r.n;
    if (!e && n > 0)
        e = hash_rows(&r, head.seq, head_hash, &ids, &tss, &hashes);
    if (!e && n > 0) {
        char old[24];
        bool moved = false;
        snprintf(old, sizeof old, "%lld", head.seq);
        e = db_audit_seal(db, old, sbuf_str(&ids), sbuf_str(&tss), sbuf_str(&hashes), &moved);
        if (!e && !moved)
            n = 0; /* another sealer was first: its chain stands, try again next round */
    }
    db_audit_unsealed_free(&r);
    sbuf_free(&ids);
    sbuf_free(&tss);
    sbuf_free(&hashes);
    if (e) {
        db_rollback(db);
        return e;
    }
    e = db_commit(db);
    if (!e)
        atomic_fetch_add(&sealed_total, (unsigned long)n);
    return e ? e : n;
}

void sealer_metrics(struct sbuf *sb)
{
    sbuf_printf(sb,
                "# HELP aidc_audit_sealed_total Audit events chained by this process.\n"
                "# TYPE aidc_audit_sealed_total counter\n"
                "aidc_audit_sealed_total %lu\n"
                "# HELP aidc_audit_checkpoints_total Audit checkpoints written by this process.\n"
                "# TYPE aidc_audit_checkpoints_total counter\n"
                "aidc_audit_checkpoints_total %lu\n",
                atomic_load(&sealed_total), atomic_load(&checkpoints_total));
}

/* The current time as RFC 3339 with microseconds, as PostgreSQL prints it back. */
static void now_rfc3339(char *out, size_t n)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    char base[24];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, n, "%s.%06dZ", base, (int)(ts.tv_nsec / 1000));
}

int sealer_checkpoint(struct db *db, const struct sign_key *key, int every_s)
{
    int e = db_begin(db, &system_ctx, false);
    if (e)
        return e;
    struct db_audit_head h;
    e = db_audit_head(db, &h);
    long long head = h.seq;
    const char *head_hex = h.hash;
    struct db_audit_last_checkpoint last;
    if (!e)
        e = db_audit_checkpoint_last(db, &last);
    bool due = !e && head > 0 && (!last.found || (last.seq < head && last.age_s >= every_s));
    if (e || !due) {
        db_rollback(db);
        return e;
    }
    char ts[64], seq[24], msg[256], sighex[129] = "";
    now_rfc3339(ts, sizeof ts);
    snprintf(seq, sizeof seq, "%lld", head);
    const char *alg = "none", *key_id = "";
    if (key && sign_key_can_sign(key)) {
        unsigned char sig[64];
        chain_checkpoint_message(head, head_hex, ts, msg, sizeof msg);
        int len = sign_message(key, msg, sig);
        if (len <= 0) {
            db_rollback(db);
            log_error("audit sealer: cannot sign a checkpoint");
            return AIDC_EINTERNAL;
        }
        chain_hex_bytes(sig, (size_t)len, sighex);
        alg = sign_key_alg(key);
        key_id = sign_key_id(key);
    }
    e = db_audit_checkpoint_insert(db, ts, seq, head_hex, alg, key_id, sighex);
    if (!e)
        e = db_commit(db);
    else
        db_rollback(db);
    if (!e)
        atomic_fetch_add(&checkpoints_total, 1);
    return e ? e : 1;
}

/* Partitions ahead and (daily) retention. */
static int housekeeping(struct sealer *s, struct db *db, time_t now)
{
    int e = db_begin(db, &system_ctx, false);
    if (!e)
        e = db_audit_partitions(db);
    e = e ? e : db_commit(db);
    if (e) {
        db_rollback(db);
        return e;
    }
    s->housekept = now;
    if (now - s->retained >= RETENTION_S) {
        char days[16];
        int dropped = 0;
        snprintf(days, sizeof days, "%d", s->cfg->audit_retention_days);
        e = db_begin(db, &system_ctx, false);
        if (!e)
            e = db_audit_retention(db, days, &dropped);
        e = e ? e : db_commit(db);
        if (e) {
            db_rollback(db);
            return e;
        }
        if (dropped)
            log_info("audit retention: dropped %d monthly partitions older than %s days",
                     dropped, days);
        s->retained = now;
    }
    return 0;
}

static int round_fn(struct db *db, bool notified, void *arg)
{
    (void)notified;
    struct sealer *s = arg;
    time_t now = time(NULL);
    if (now - s->housekept >= HOUSEKEEPING_S) {
        int e = housekeeping(s, db, now);
        if (e)
            return e;
    }
    int n = sealer_seal(db, s->cfg->audit_seal_grace_ms, BATCH);
    if (n < 0)
        return n;
    int e = sealer_checkpoint(db, s->key, s->cfg->audit_checkpoint_seconds);
    if (e < 0)
        return e;
    return n == BATCH;
}

struct worker *sealer_start(const struct config *cfg, const struct sign_key *key)
{
    struct sealer *s = xcalloc(1, sizeof *s);
    s->cfg = cfg;
    s->key = key;
    int every = cfg->audit_seal_grace_ms / 2;
    struct worker_spec spec = {
        .name = "audit-sealer",
        .lead = WORKER_LEAD_SEALER,
        .channels = {NULL},
        .interval_ms = every < 100 ? 100 : every > 1000 ? 1000 : every,
        .round = round_fn,
        .owns_arg = true,
        .arg = s,
    };
    return worker_start(cfg->worker_database_url, &spec);
}

