/* export.c - streaming audit exports (see export.h). */
#include "auditexport.h"

#include "../audit/exportcheck.h"

#include "../db/auditchain.h"
#include "../db/plans.h"
#include "../lib/csv.h"

#include "../audit/chain.h"
#include "../lib/err.h"
#include "../lib/log.h"
#include "../lib/sbuf.h"
#include "../lib/xalloc.h"
#include "../server/dispatch.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 5000

enum phase { PH_HEAD, PH_ROWS, PH_TRAILER, PH_DONE };

struct export
{
    struct req *rq; /* lives until the response is done */
    struct db_audit_filter f;
    char *owned[11];
    bool csv;
    const struct sign_key *key;
    enum phase phase;
    char after_ts[48], until[48];
    long long after_id, last_seq;
    struct db_audit_export_batch res;
    struct db_audit_checkpoints cps;
    size_t row, cp;
    struct sbuf out;
    size_t sent;
    EVP_MD_CTX *digest;
    long long rows, sealed, unsealed, checkpoints;
};

static const char *const csv_columns[] = {
    "id",        "seq",           "ts",          "actor",     "actor_user_id", "token_id",
    "roles",     "tenant",        "tenant_id",   "source_ip", "user_agent",    "request_id",
    "action",    "resource_type", "resource_id", "outcome",   "status",        "details",
    "record_id", "prev_hash",     "hash"};

/* The JSON value v as CSV text (strings bare, null empty, the rest JSON). */
static void csv_value(struct sbuf *sb, const json_t *v)
{
    if (!v || json_is_null(v))
        return;
    if (json_is_string(v)) {
        csv_cell(sb, json_string_value(v));
        return;
    }
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    csv_cell(sb, text ? text : "");
    free(text);
}

static void csv_row(struct export *x, json_t *ev)
{
    json_t *actor = json_object_get(ev, "actor"), *res = json_object_get(ev, "resource");
    const json_t *cells[] = {json_object_get(ev, "id"),
                             json_object_get(ev, "seq"),
                             json_object_get(ev, "ts"),
                             json_object_get(actor, "user"),
                             json_object_get(actor, "user_id"),
                             json_object_get(actor, "token_id"),
                             NULL /* roles */,
                             json_object_get(ev, "tenant"),
                             json_object_get(ev, "tenant_id"),
                             json_object_get(ev, "source_ip"),
                             json_object_get(ev, "user_agent"),
                             json_object_get(ev, "request_id"),
                             json_object_get(ev, "action"),
                             json_object_get(res, "type"),
                             json_object_get(res, "id"),
                             json_object_get(ev, "outcome"),
                             json_object_get(ev, "status"),
                             json_object_get(ev, "details"),
                             json_object_get(ev, "record_id"),
                             json_object_get(ev, "prev_hash"),
                             json_object_get(ev, "hash")};
    for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++) {
        if (i)
            sbuf_putc(&x->out, ',');
        if (i == 6) { /* roles: "a;b" */
            struct sbuf roles = SBUF_INIT;
            size_t k;
            json_t *r;
            json_array_foreach(json_object_get(actor, "roles"), k, r)
                sbuf_printf(&roles, "%s%s", k ? ";" : "", json_string_value(r));
            csv_cell(&x->out, sbuf_str(&roles));
            sbuf_free(&roles);
        } else {
            csv_value(&x->out, cells[i]);
        }
    }
    sbuf_puts(&x->out, "\r\n");
}

/* Append text to the output and to the running digest. */
static void emit(struct export *x, const char *text, size_t n)
{
    sbuf_append(&x->out, text, n);
    if (x->digest)
        EVP_DigestUpdate(x->digest, text, n);
}

static void emit_checkpoints(struct export *x, long long seq)
{
    for (; x->cp < x->cps.n; x->cp++) {
        const struct db_audit_checkpoint *c = &x->cps.v[x->cp];
        long long cseq = c->seq;
        if (cseq > seq)
            break;
        if (cseq < seq)
            continue; /* its event is not in this export */
        json_t *cp =
            json_pack("{s:{s:I, s:s, s:I, s:s, s:s, s:s, s:s}}", "checkpoint", "id",
                      (json_int_t)c->id, "ts", c->ts, "seq", (json_int_t)cseq, "head_hash",
                      c->head_hash, "alg", c->alg, "key_id", c->key_id, "signature", c->signature);
        char *line = cp ? json_dumps(cp, JSON_COMPACT) : NULL;
        if (line) {
            emit(x, line, strlen(line));
            emit(x, "\n", 1);
            x->checkpoints++;
        }
        free(line);
        json_decref(cp);
    }
}

/* One row of x->res into the output. 0 or -1. */
static int row_out(struct export *x, const struct db_audit_export_row *row)
{
    const char *json = row->json;
    bool sealed = row->sealed;
    x->rows++;
    snprintf(x->after_ts, sizeof x->after_ts, "%s", row->ts);
    x->after_id = row->id;
    if (sealed) {
        x->sealed++;
        x->last_seq = row->seq;
    } else {
        x->unsealed++;
    }
    if (x->csv) {
        json_t *ev = json_loads(json, 0, NULL);
        if (!ev)
            return -1;
        json_object_set_new(ev, "prev_hash", sealed ? json_string(row->prev_hash) : json_null());
        csv_row(x, ev);
        json_decref(ev);
        return 0;
    }
    /* splice prev_hash in front of the object PostgreSQL built: no re-encoding */
    if (json[0] != '{')
        return -1;
    char head[96];
    int n = sealed ? snprintf(head, sizeof head, "{\"prev_hash\":\"%s\", ", row->prev_hash)
                   : snprintf(head, sizeof head, "{\"prev_hash\":null, ");
    emit(x, head, (size_t)n);
    emit(x, json + 1, strlen(json + 1));
    emit(x, "\n", 1);
    if (sealed)
        emit_checkpoints(x, x->last_seq);
    return 0;
}

static void trailer(struct export *x)
{
    if (x->csv)
        return;
    unsigned char d[32];
    unsigned int dl = 0;
    char hex[65] = "";
    if (x->digest && EVP_DigestFinal_ex(x->digest, d, &dl) == 1 && dl == 32)
        chain_hex(d, hex);
    json_t *t = json_pack("{s:s, s:b, s:I, s:I, s:I, s:I, s:s}", "format", "aidc-audit-export/1",
                          "complete", 1, "rows", (json_int_t)x->rows, "sealed",
                          (json_int_t)x->sealed, "unsealed", (json_int_t)x->unsealed, "checkpoints",
                          (json_int_t)x->checkpoints, "sha256", hex);
    if (t && x->key && sign_key_can_sign(x->key) && hex[0]) {
        char msg[160], sighex[129];
        unsigned char sig[64];
        exportcheck_message(x->rows, hex, msg, sizeof msg);
        int n = sign_message(x->key, msg, sig);
        if (n > 0)
            chain_hex_bytes(sig, (size_t)n, sighex);
        if (n > 0)
            json_object_set_new(t, "signature",
                                json_pack("{s:s, s:s, s:s}", "alg", sign_key_alg(x->key), "key_id",
                                          sign_key_id(x->key), "value", sighex));
    }
    json_t *wrap = t ? json_pack("{s:o}", "export", t) : NULL;
    char *line = wrap ? json_dumps(wrap, JSON_COMPACT) : NULL;
    if (line) {
        sbuf_puts(&x->out, line);
        sbuf_putc(&x->out, '\n');
    }
    free(line);
    json_decref(wrap);
}

static int fetch_batch(struct export *x);

/* Read the next batch into x->res, with the checkpoints of its positions. 0 or an aidc_err. */
static int fetch(struct export *x)
{
    /* after dispatch: the request's round trips count the pages too (access log) */
    unsigned long trips = db_round_trips(x->rq->db);
    int e = fetch_batch(x);
    req_add_round_trips(x->rq, x->rq->db, trips);
    return e;
}

static int fetch_batch(struct export *x)
{
    db_audit_export_free(&x->res);
    db_audit_checkpoints_free(&x->cps);
    x->row = x->cp = 0;
    int e = dispatch_begin_read(x->rq);
    if (!e)
        e = db_custom_plans(x->rq->db);
    if (!e)
        e = db_audit_export(x->rq->db, &x->f, x->after_ts[0] ? x->after_ts : NULL, x->after_id,
                            x->until, BATCH, &x->res);
    const struct db_audit_export_row *lo = NULL, *hi = NULL;
    for (size_t i = 0; !e && i < x->res.n; i++)
        if (x->res.v[i].sealed) {
            lo = lo ? lo : &x->res.v[i];
            hi = &x->res.v[i];
        }
    if (!e && lo && !x->csv)
        e = db_audit_checkpoints_between(x->rq->db, lo->seq, hi->seq, &x->cps);
    if (e) {
        db_rollback(x->rq->db);
        return e;
    }
    db_commit_nowait(x->rq->db);
    return 0;
}

/* Produce more output; -1 on a failure (the stream is cut). */
static int produce(struct export *x)
{
    if (x->phase == PH_HEAD) {
        if (x->csv) {
            for (size_t i = 0; i < sizeof csv_columns / sizeof csv_columns[0]; i++)
                sbuf_printf(&x->out, "%s%s", i ? "," : "", csv_columns[i]);
            sbuf_puts(&x->out, "\r\n");
        }
        x->phase = PH_ROWS;
        return fetch(x) ? -1 : 0;
    }
    if (x->phase == PH_TRAILER) {
        trailer(x);
        x->phase = PH_DONE;
        return 0;
    }
    if (x->row < x->res.n) {
        size_t stop = x->row + 50; /* a slice: keep the buffer small */
        for (; x->row < x->res.n && x->row < stop; x->row++)
            if (row_out(x, &x->res.v[x->row]) != 0)
                return -1;
        return 0;
    }
    if (x->res.n < BATCH) {
        x->phase = PH_TRAILER;
        return 0;
    }
    return fetch(x) ? -1 : 0;
}

static long next(void *state, char *buf, size_t max)
{
    struct export *x = state;
    while (x->out.len - x->sent < max && x->phase != PH_DONE) {
        if (produce(x) != 0) {
            log_error("audit export cut off after %lld rows: the database failed", x->rows);
            return -1;
        }
    }
    size_t left = x->out.len - x->sent, n = left < max ? left : max;
    memcpy(buf, x->out.buf + x->sent, n);
    x->sent += n;
    if (x->sent >= x->out.len / 2) { /* keep only what is unsent: constant memory */
        memmove(x->out.buf, x->out.buf + x->sent, x->out.len - x->sent);
        x->out.len -= x->sent;
        x->sent = 0;
    }
    return (long)n;
}

static void export_free(void *state)
{
    struct export *x = state;
    db_audit_export_free(&x->res);
    db_audit_checkpoints_free(&x->cps);
    sbuf_free(&x->out);
    EVP_MD_CTX_free(x->digest);
    for (size_t i = 0; i < sizeof x->owned / sizeof x->owned[0]; i++)
        free(x->owned[i]);
    free(x);
}

static const char *own(struct export *x, size_t i, const char *s)
{
    x->owned[i] = s ? xstrdup(s) : NULL;
    return x->owned[i];
}

int auditexport_start(struct req *rq, struct resp *rs, const struct db_audit_filter *f, bool csv,
                      const struct sign_key *key)
{
    struct export *x = xcalloc(1, sizeof *x);
    /* the export ends with what existed when it began */
    int e = db_audit_now(rq->db, x->until, sizeof x->until);
    if (e) {
        free(x);
        return e;
    }
    x->rq = rq;
    x->csv = csv;
    x->key = key;
    x->f.actor = own(x, 0, f->actor);
    x->f.tenant = own(x, 1, f->tenant);
    x->f.action = own(x, 2, f->action);
    x->f.action_prefix = own(x, 3, f->action_prefix);
    x->f.outcome = own(x, 4, f->outcome);
    x->f.source_ip = own(x, 5, f->source_ip);
    x->f.from = own(x, 6, f->from);
    x->f.to = own(x, 7, f->to);
    x->f.q = own(x, 8, f->q);
    x->f.resource_type = own(x, 9, f->resource_type);
    x->f.resource_id = own(x, 10, f->resource_id);
    x->digest = EVP_MD_CTX_new();
    if (!x->digest || EVP_DigestInit_ex(x->digest, EVP_sha256(), NULL) != 1) {
        export_free(x);
        return AIDC_EINTERNAL;
    }
    rs->status = 200;
    rs->content_type = csv ? "text/csv; charset=utf-8" : "application/x-ndjson";
    rs->stream.next = next;
    rs->stream.free = export_free;
    rs->stream.state = x;
    resp_header(rs, "Content-Disposition",
                csv ? "attachment; filename=\"audit-events.csv\""
                    : "attachment; filename=\"audit-events.ndjson\"");
    return 0;
}
