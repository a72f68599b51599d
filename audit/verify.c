/* verify.c - checking the audit chain in the database (see verify.h). */
#include "verify.h"

#include "../db/auditchain.h"
#include "../lib/err.h"
#include "../lib/log.h"
#include "chain.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 5000

/* A run of chain positions removed by retention. */
struct run {
    long long first, last;
    unsigned char last_hash[CHAIN_HASH_LEN];
};

struct walk {
    const struct audit_verify_io *io;
    const struct sign_key *key;
    struct audit_verdict *v;
    struct run *runs;
    size_t nruns;
    struct db_audit_checkpoints cps; /* checkpoints of the range, by seq */
    size_t cp;                       /* next one to check */
};

static int broken(struct audit_verdict *v, long long id, long long seq, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int broken(struct audit_verdict *v, long long id, long long seq, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->reason, sizeof v->reason, fmt, ap);
    va_end(ap);
    v->ok = false;
    v->broken_at = id;
    v->broken_seq = seq;
    return 1;
}

/* The recorded run that ends at last (merged with the runs before it), or NULL. */
static const struct run *run_ending(const struct walk *w, long long last)
{
    for (size_t i = 0; i < w->nruns; i++)
        if (w->runs[i].last == last)
            return &w->runs[i];
    return NULL;
}

/* Positions first..last are missing: accepted when retention recorded exactly that. */
static bool hole_recorded(const struct walk *w, long long first, long long last,
                          unsigned char prev[CHAIN_HASH_LEN])
{
    long long at = last;
    const struct run *end = NULL;
    /* first == 0: the chain's start was dropped; the runs reach back as far as they go */
    while (at >= first && at > 0) {
        const struct run *r = run_ending(w, at);
        if (!r)
            return first == 0 && end != NULL;
        if (!end)
            end = r;
        at = r->first - 1;
    }
    if (!end || (first != 0 && at != first - 1))
        return false;
    memcpy(prev, end->last_hash, CHAIN_HASH_LEN);
    return true;
}

static int load_runs(struct db *db, struct walk *w)
{
    struct db_audit_runs r = {0};
    int e = db_audit_retention_runs(db, &r);
    if (e)
        return e;
    w->runs = calloc(r.n + 1, sizeof *w->runs);
    if (!w->runs) {
        db_audit_runs_free(&r);
        return AIDC_EINTERNAL;
    }
    for (size_t i = 0; i < r.n; i++) {
        struct run *run = &w->runs[w->nruns];
        run->first = r.v[i].first_seq;
        run->last = r.v[i].last_seq;
        if (chain_unhex(r.v[i].last_hash, run->last_hash))
            w->nruns++;
    }
    db_audit_runs_free(&r);
    return 0;
}

/*
 * Check the signature of checkpoint c, found at chain position seq after
 * event_id. 1 when it is broken (the verdict says why); else 0, *unchecked
 * telling whether it could not be checked (unsigned, or no key).
 */
static int check_signature(struct walk *w, const struct db_audit_checkpoint *c,
                           long long event_id, long long seq, bool *unchecked)
{
    struct audit_verdict *v = w->v;
    long long cid = c->id, cseq = c->seq;
    const char *alg = c->alg;
    *unchecked = false;
    if (strcmp(alg, "none") == 0 && w->key) {
        /* with a key, an unsigned head is a downgrade: whoever rewrote the chain
         * could write those too */
        v->checkpoint_id = cid;
        return broken(v, event_id, seq,
                      "checkpoint %lld is not signed although a signing key is configured "
                      "(forged, or written before the key was: verify from a later "
                      "time with from=)", cid);
    }
    if (strcmp(alg, "none") == 0 || !w->key) {
        *unchecked = true; /* no key to check with: counted, not trusted */
        return 0;
    }
    if (strcmp(alg, sign_key_alg(w->key)) != 0 ||
        strcmp(c->key_id, sign_key_id(w->key)) != 0) {
        v->checkpoint_id = cid;
        return broken(v, event_id, seq, "checkpoint %lld is signed with key %s (%s), not "
                                        "with the configured key %s",
                      cid, c->key_id, alg, sign_key_id(w->key));
    }
    char msg[256];
    unsigned char sig[64];
    size_t sl = 0;
    bool parsed = chain_unhex_bytes(c->signature, sig, sizeof sig, &sl);
    chain_checkpoint_message(cseq, c->head_hash, c->ts, msg, sizeof msg);
    if (!parsed || !sign_verify(w->key, msg, sig, sl)) {
        v->checkpoint_id = cid;
        return broken(v, event_id, seq, "the signature of checkpoint %lld does not verify: "
                                        "the checkpoint was altered", cid);
    }
    return 0;
}

/* Check the checkpoints at seq (hash: the recomputed one there). 1 when one is broken. */
static int check_checkpoints(struct walk *w, long long seq, long long event_id,
                             const unsigned char hash[CHAIN_HASH_LEN])
{
    for (; w->cp < w->cps.n && w->cps.v[w->cp].seq <= seq; w->cp++) {
        const struct db_audit_checkpoint *c = &w->cps.v[w->cp];
        long long cid = c->id, cseq = c->seq;
        if (cseq < seq)
            continue; /* its position lies in a hole (reported there) */
        unsigned char head[CHAIN_HASH_LEN];
        if (!chain_unhex(c->head_hash, head) || memcmp(head, hash, sizeof head) != 0) {
            w->v->checkpoint_id = cid;
            return broken(w->v, event_id, seq,
                          "checkpoint %lld names another chain head at position %lld: the "
                          "chain was rewritten, or the checkpoint altered", cid, seq);
        }
        bool unchecked;
        if (check_signature(w, c, event_id, seq, &unchecked))
            return 1;
        if (unchecked)
            w->v->unsigned_checkpoints++;
        else
            w->v->checkpoints++;
    }
    return 0;
}

/* Check one entry; 1 when broken. prev is updated to its hash. */
static int check_entry(struct walk *w, const struct db_audit_entry *en, long long *expect,
                       unsigned char prev[CHAIN_HASH_LEN])
{
    struct audit_verdict *v = w->v;
    long long seq = en->seq, id = en->event_id;
    unsigned char stored[CHAIN_HASH_LEN], stored_prev[CHAIN_HASH_LEN], h[CHAIN_HASH_LEN];
    if (seq != *expect) {
        if (seq < *expect || !hole_recorded(w, *expect, seq - 1, prev))
            return broken(v, id, seq, "chain positions %lld..%lld are missing before event "
                                      "%lld: entries were deleted", *expect, seq - 1, id);
    }
    if (!en->json)
        return broken(v, id, seq, "event %lld (chain position %lld) is missing: it was deleted",
                      id, seq);
    if (!chain_unhex(en->hash, stored) || !chain_unhex(en->prev_hash, stored_prev))
        return broken(v, id, seq, "the chain entry of event %lld is malformed", id);
    if (memcmp(stored_prev, prev, CHAIN_HASH_LEN) != 0)
        return broken(v, id, seq, "the link before event %lld was altered (its previous hash "
                                  "does not match the chain)", id);
    json_t *ev = json_loads(en->json, 0, NULL);
    int rc = ev ? chain_link(prev, ev, h) : -1;
    json_decref(ev);
    if (rc != 0)
        return broken(v, id, seq, "event %lld cannot be encoded", id);
    if (memcmp(h, stored, CHAIN_HASH_LEN) != 0)
        return broken(v, id, seq, "event %lld was altered: its hash does not match its contents",
                      id);
    memcpy(prev, h, CHAIN_HASH_LEN);
    v->verified++;
    *expect = seq + 1;
    return check_checkpoints(w, seq, id, h);
}

/* The hash before position first (zeros at the start, else the entry there). */
static int start_hash(struct db *db, struct walk *w, long long first, unsigned char prev[32])
{
    memset(prev, 0, CHAIN_HASH_LEN);
    if (first <= 1)
        return 0;
    struct db_audit_entries r = {0};
    int e = db_audit_chain_batch(db, first - 2, first - 1, 1, &r);
    if (e)
        return e;
    bool found = r.n == 1 && chain_unhex(r.v[0].hash, prev);
    db_audit_entries_free(&r);
    if (!found && !hole_recorded(w, 0, first - 1, prev))
        memset(prev, 0, CHAIN_HASH_LEN); /* the first entry's own link will say so */
    return 0;
}

/* Open the transaction of the next batch; each batch has its own, so a long check
 * holds no transaction open (which would hold the sealer back). */
static int begin(const struct audit_verify_io *io)
{
    return io->begin(io->db, io->arg);
}

static void end(const struct audit_verify_io *io, int e)
{
    if (e)
        db_rollback(io->db);
    else
        db_commit_nowait(io->db);
}

static int walk_chain(struct db *db, struct walk *w, long long first, long long last)
{
    unsigned char prev[CHAIN_HASH_LEN];
    int e = begin(w->io);
    if (!e)
        e = start_hash(db, w, first, prev);
    end(w->io, e);
    long long expect = first, after = first - 1;
    while (!e && after < last) {
        struct db_audit_entries r = {0};
        e = begin(w->io);
        if (!e)
            e = db_audit_chain_batch(db, after, last, BATCH, &r);
        end(w->io, e);
        if (e)
            break;
        for (size_t i = 0; i < r.n; i++)
            if (check_entry(w, &r.v[i], &expect, prev)) {
                db_audit_entries_free(&r);
                return 0;
            }
        after = r.n ? r.v[r.n - 1].seq : last;
        db_audit_entries_free(&r);
    }
    return e;
}

/*
 * The end of the chain. The walk sees what is there, not what is gone: the
 * newest events deleted with their chain entries (and the head moved back)
 * leave a shorter chain that links perfectly. A checkpoint past its last
 * position gives that away, and its signature (made with a key that is not
 * in the database) shows it is no forgery. A head left past the end needs
 * no check of its own: the sealer signs it into such a checkpoint within
 * AIDC_AUDIT_CHECKPOINT_SECONDS. One statement reads the end and the
 * checkpoints, in one snapshot: a seal and a checkpoint committed meanwhile
 * are no false alarm. Checkpoints deleted along with the events are not
 * found here: nothing left in the database remembers them (docs/audit.md).
 */
static int check_end(struct db *db, struct walk *w)
{
    long long last = 0;
    struct db_audit_checkpoints beyond = {0};
    int e = begin(w->io);
    if (!e)
        e = db_audit_chain_end(db, &last, &beyond);
    end(w->io, e);
    if (e)
        return e;
    const struct db_audit_checkpoint *c = beyond.n ? &beyond.v[0] : NULL;
    long long cid = c ? c->id : 0, cseq = c ? c->seq : 0;
    bool unchecked = false;
    if (c && !check_signature(w, c, 0, last + 1, &unchecked)) {
        w->v->checkpoint_id = cid;
        broken(w->v, 0, last + 1,
               "the chain ends at position %lld but checkpoint %lld covers up to position "
               "%lld: events were removed (positions %lld..%lld)%s",
               last, cid, cseq, last + 1, cseq,
               unchecked ? "; the checkpoint's signature was not checked" : "");
    }
    db_audit_checkpoints_free(&beyond);
    return 0;
}

int audit_verify(const struct audit_verify_io *io, const struct sign_key *key, const char *from,
                 const char *to, struct audit_verdict *v)
{
    memset(v, 0, sizeof *v);
    v->ok = true;
    struct walk w = {.io = io, .key = key, .v = v};
    struct db *db = io->db;
    struct db_audit_seq_range range = {0};
    long long unsealed = 0;
    int e = begin(io);
    if (!e)
        e = db_audit_seq_range(db, from, to, &range);
    if (!e)
        e = db_audit_unsealed_count(db, &unsealed);
    if (!e)
        e = load_runs(db, &w);
    if (!e && range.any) {
        v->first_seq = range.first;
        v->last_seq = range.last;
        e = db_audit_checkpoints_between(db, v->first_seq, v->last_seq, &w.cps);
    }
    end(io, e);
    if (!e && v->first_seq)
        e = walk_chain(db, &w, v->first_seq, v->last_seq);
    if (!e && v->ok)
        e = check_end(db, &w);
    v->unsealed = unsealed;
    db_audit_checkpoints_free(&w.cps);
    free(w.runs);
    if (e)
        return e;
    if (v->ok && !key && v->unsigned_checkpoints)
        snprintf(v->reason, sizeof v->reason,
                 "hashes and links verified; no key to check checkpoint signatures with");
    return 0;
}

json_t *audit_verdict_json(const struct audit_verdict *v)
{
    json_t *o = json_pack("{s:b, s:I, s:I, s:I, s:I}", "ok", v->ok, "verified",
                          (json_int_t)v->verified, "checkpoints", (json_int_t)v->checkpoints,
                          "unsigned_checkpoints", (json_int_t)v->unsigned_checkpoints, "unsealed",
                          (json_int_t)v->unsealed);
    if (!o)
        return NULL;
    json_object_set_new(o, "first_seq", v->first_seq ? json_integer(v->first_seq) : json_null());
    json_object_set_new(o, "last_seq", v->last_seq ? json_integer(v->last_seq) : json_null());
    if (!v->ok) {
        json_object_set_new(o, "broken_at", json_integer(v->broken_at));
        json_object_set_new(o, "broken_seq", json_integer(v->broken_seq));
        if (v->checkpoint_id)
            json_object_set_new(o, "checkpoint_id", json_integer(v->checkpoint_id));
    }
    if (v->reason[0])
        json_object_set_new(o, "reason", json_string(v->reason));
    return o;
}
