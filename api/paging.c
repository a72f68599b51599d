/* paging.c - keyset pagination helpers. */
#include "paging.h"

#include "../db/rowjson.h"
#include "../server/crypto.h"
#include "../server/err.h"
#include "../server/xalloc.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#define CURSOR_MAX 512

int paging_parse(const struct req *rq, struct resp *rs, struct page *pg)
{
    pg->limit = PAGING_DEFAULT;
    pg->after = NULL;
    const char *l = req_query(rq, "limit");
    if (l) {
        char *end;
        errno = 0;
        long v = strtol(l, &end, 10);
        if (errno || *end || end == l || !(*l >= '0' && *l <= '9') || v < 1 || v > PAGING_MAX) {
            api_field_problem(rs, "limit", PROBLEM_V_LIMIT, json_pack("{s:i}", "max", PAGING_MAX));
            return api_fail_fields(rs);
        }
        pg->limit = (int)v;
    }
    const char *c = req_query(rq, "cursor");
    if (c && *c) {
        size_t n = strlen(c);
        unsigned char buf[CURSOR_MAX + 1];
        long m = n <= CURSOR_MAX * 4 / 3 + 4 ? crypto_b64url_decode(c, n, buf, CURSOR_MAX) : -1;
        bool ok = m > 0 && memchr(buf, 0, (size_t)m) == NULL;
        if (ok) {
            buf[m] = '\0';
            /* cursors we issue are UTF-8 text; anything else was not ours */
            json_t *probe = json_stringn((const char *)buf, (size_t)m);
            ok = probe != NULL;
            json_decref(probe);
        }
        if (!ok) {
            api_field_problem(rs, "cursor", PROBLEM_V_CURSOR, NULL);
            return api_fail_fields(rs);
        }
        pg->after = xstrdup((const char *)buf);
    }
    return 0;
}

void paging_free(struct page *pg)
{
    free(pg->after);
    pg->after = NULL;
}

void paging_split(char *after, char **second)
{
    char *bar = after ? strchr(after, '|') : NULL;
    if (bar)
        *bar = '\0';
    *second = bar ? bar + 1 : NULL;
}

int paging_parse_keyed(const struct req *rq, struct resp *rs, struct page *pg, char **id)
{
    *id = NULL;
    int e = paging_parse(rq, rs, pg);
    if (e)
        return e;
    paging_split(pg->after, id);
    if (pg->after && (!*id || !crypto_uuid_valid(*id))) {
        paging_free(pg);
        *id = NULL;
        api_field_problem(rs, "cursor", PROBLEM_V_CURSOR, NULL);
        return api_fail_fields(rs);
    }
    return 0;
}

int paging_answer_keyed(struct resp *rs, PGresult *r, struct page *pg, int e)
{
    if (e == AIDC_EINVAL) {
        api_field_problem(rs, "cursor", PROBLEM_V_CURSOR, NULL);
        e = api_fail_fields(rs);
    } else if (!e) {
        e = paging_answer(rs, r, pg);
    }
    PQclear(r);
    paging_free(pg);
    return e;
}

static int answer(struct resp *rs, PGresult *r, const struct page *pg, bool prebuilt,
                  const char *const *drop)
{
    int n = PQntuples(r);
    json_t *items = json_array();
    json_t *next = json_null();
    if (!items)
        return AIDC_EINTERNAL;
    for (int i = 0; i < n && i < pg->limit; i++) {
        json_t *o = prebuilt ? json_loads(PQgetvalue(r, i, 0), 0, NULL) : rowjson_object(r, i);
        for (size_t k = 0; o && drop && drop[k]; k++)
            (void)json_object_del(o, drop[k]); /* -1: it was not there */
        if (!o || json_array_append_new(items, o) != 0) {
            json_decref(items);
            return AIDC_EINTERNAL;
        }
    }
    if (n > pg->limit) {
        const char *key = rowjson_get(r, pg->limit - 1, "_cursor");
        if (!key) {
            json_decref(items);
            return AIDC_EINTERNAL;
        }
        size_t kl = strlen(key);
        char *enc = xmalloc(kl * 4 / 3 + 8);
        crypto_b64url_encode((const unsigned char *)key, kl, enc, kl * 4 / 3 + 8);
        next = json_string(enc);
        free(enc);
    }
    return resp_json(rs, MHD_HTTP_OK, json_pack("{s:o, s:o}", "items", items, "next_cursor", next));
}

int paging_answer(struct resp *rs, PGresult *r, const struct page *pg)
{
    return answer(rs, r, pg, false, NULL);
}

int paging_answer_prebuilt(struct resp *rs, PGresult *r, const struct page *pg)
{
    return answer(rs, r, pg, true, NULL);
}

int paging_answer_without(struct resp *rs, PGresult *r, const struct page *pg,
                          const char *const *drop)
{
    return answer(rs, r, pg, false, drop);
}
