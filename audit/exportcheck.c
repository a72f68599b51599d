/* exportcheck.c - offline check of an NDJSON audit export (see exportcheck.h). */
#include "exportcheck.h"

#include "chain.h"

#include <jansson.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct state {
    struct export_check *r;
    const struct sign_key *key;
    EVP_MD_CTX *md;
    long long last_seq;
    unsigned char last_hash[CHAIN_HASH_LEN];
    bool trailer_seen;
};

static int bad(struct export_check *r, long long event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int bad(struct export_check *r, long long event, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->reason, sizeof r->reason, fmt, ap);
    va_end(ap);
    r->ok = false;
    r->bad_line = r->lines;
    r->bad_event = event;
    return 1;
}

static int event_line(struct state *s, json_t *ev)
{
    struct export_check *r = s->r;
    long long id = json_integer_value(json_object_get(ev, "id"));
    json_t *seqv = json_object_get(ev, "seq");
    r->events++;
    if (!json_is_integer(json_object_get(ev, "id")))
        return bad(r, 0, "an event without an id");
    if (json_is_null(seqv) || !seqv) {
        r->unsealed++; /* not chained yet when exported: nothing to check it against */
        return 0;
    }
    long long seq = json_integer_value(seqv);
    unsigned char prev[CHAIN_HASH_LEN], stored[CHAIN_HASH_LEN], h[CHAIN_HASH_LEN];
    if (!json_is_integer(seqv) || seq <= s->last_seq)
        return bad(r, id, "event %lld is out of chain order (position %lld after %lld)", id, seq,
                   s->last_seq);
    if (!chain_unhex(json_string_value(json_object_get(ev, "prev_hash")), prev) ||
        !chain_unhex(json_string_value(json_object_get(ev, "hash")), stored))
        return bad(r, id, "event %lld has no valid prev_hash and hash", id);
    if (s->last_seq && seq == s->last_seq + 1) {
        if (memcmp(prev, s->last_hash, CHAIN_HASH_LEN) != 0)
            return bad(r, id, "the link before event %lld is broken: its prev_hash is not the "
                              "hash of the line before", id);
        r->links++;
    }
    if (chain_link(prev, ev, h) != 0)
        return bad(r, id, "event %lld cannot be encoded", id);
    if (memcmp(h, stored, CHAIN_HASH_LEN) != 0)
        return bad(r, id, "event %lld was altered: its hash does not match its contents", id);
    s->last_seq = seq;
    memcpy(s->last_hash, h, CHAIN_HASH_LEN);
    r->sealed++;
    return 0;
}

static int checkpoint_line(struct state *s, json_t *cp)
{
    struct export_check *r = s->r;
    long long id = json_integer_value(json_object_get(cp, "id"));
    long long seq = json_integer_value(json_object_get(cp, "seq"));
    const char *head = json_string_value(json_object_get(cp, "head_hash"));
    const char *alg = json_string_value(json_object_get(cp, "alg"));
    const char *key_id = json_string_value(json_object_get(cp, "key_id"));
    const char *ts = json_string_value(json_object_get(cp, "ts"));
    unsigned char h[CHAIN_HASH_LEN], sig[64];
    size_t sl = 0;
    if (seq != s->last_seq || !chain_unhex(head, h) || memcmp(h, s->last_hash, sizeof h) != 0)
        return bad(r, 0, "checkpoint %lld does not match the event before it", id);
    if (s->key && (!alg || strcmp(alg, "none") == 0))
        return bad(r, 0, "checkpoint %lld is not signed, but a key was given", id);
    if (s->key) {
        char msg[256];
        if (strcmp(alg, sign_key_alg(s->key)) != 0 || !key_id ||
            strcmp(key_id, sign_key_id(s->key)) != 0)
            return bad(r, 0, "checkpoint %lld is signed with key %s, not the given key %s", id,
                       key_id ? key_id : "?", sign_key_id(s->key));
        chain_checkpoint_message(seq, head, ts ? ts : "", msg, sizeof msg);
        if (!chain_unhex_bytes(json_string_value(json_object_get(cp, "signature")), sig, sizeof sig, &sl) ||
            !sign_verify(s->key, msg, sig, sl))
            return bad(r, 0, "the signature of checkpoint %lld does not verify", id);
        r->checkpoints++;
    }
    return 0;
}

static int trailer_line(struct state *s, json_t *t)
{
    struct export_check *r = s->r;
    unsigned char d[32];
    unsigned int dl = 0;
    char hex[65];
    if (EVP_DigestFinal_ex(s->md, d, &dl) != 1 || dl != 32)
        return bad(r, 0, "cannot compute the digest");
    chain_hex(d, hex);
    s->trailer_seen = true;
    if (json_integer_value(json_object_get(t, "rows")) != r->events)
        return bad(r, 0, "the trailer counts %lld events, the export holds %lld: lines were "
                         "removed or added",
                   (long long)json_integer_value(json_object_get(t, "rows")), r->events);
    const char *want = json_string_value(json_object_get(t, "sha256"));
    if (!want || strcmp(want, hex) != 0)
        return bad(r, 0, "the export's digest does not match its lines: it was edited");
    json_t *sig = json_object_get(t, "signature");
    if (s->key) {
        unsigned char raw[64];
        size_t sl = 0;
        char msg[160];
        const char *key_id = json_string_value(json_object_get(sig, "key_id"));
        if (!sig)
            return bad(r, 0, "the export is not signed, but a key was given");
        if (!key_id || strcmp(key_id, sign_key_id(s->key)) != 0)
            return bad(r, 0, "the export is signed with key %s, not the given key %s",
                       key_id ? key_id : "?", sign_key_id(s->key));
        exportcheck_message(r->events, hex, msg, sizeof msg);
        if (!chain_unhex_bytes(json_string_value(json_object_get(sig, "value")), raw, sizeof raw, &sl) ||
            !sign_verify(s->key, msg, raw, sl))
            return bad(r, 0, "the export's signature does not verify");
        r->signed_export = true;
    }
    return 0;
}

int export_check(FILE *f, const struct sign_key *key, struct export_check *r)
{
    memset(r, 0, sizeof *r);
    r->ok = true;
    struct state s = {.r = r, .key = key, .md = EVP_MD_CTX_new()};
    if (!s.md || EVP_DigestInit_ex(s.md, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(s.md);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int stop = 0;
    while (!stop && (n = getline(&line, &cap, f)) > 0) {
        r->lines++;
        if (s.trailer_seen) {
            stop = bad(r, 0, "lines follow the trailer");
            break;
        }
        json_error_t jerr;
        json_t *o = json_loadb(line, (size_t)n, JSON_REJECT_DUPLICATES, &jerr);
        json_t *t = o ? json_object_get(o, "export") : NULL;
        if (!o) {
            stop = bad(r, 0, "not JSON: %s", jerr.text);
        } else if (t) {
            stop = trailer_line(&s, t);
        } else {
            EVP_DigestUpdate(s.md, line, (size_t)n);
            json_t *cp = json_object_get(o, "checkpoint");
            stop = cp ? checkpoint_line(&s, cp) : event_line(&s, o);
        }
        json_decref(o);
    }
    bool read_error = ferror(f) != 0;
    free(line);
    EVP_MD_CTX_free(s.md);
    if (read_error)
        return -1;
    if (!stop && !s.trailer_seen)
        bad(r, 0, "the export has no trailer: it is truncated");
    return 0;
}

void exportcheck_message(long long rows, const char *digest_hex, char *out, size_t n)
{
    snprintf(out, n, "aidc-audit-export/1\nrows=%lld\nsha256=%s\n", rows, digest_hex);
}
