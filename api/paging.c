/* paging.c - keyset pagination helpers. */
#include "paging.h"

#include "../db/rowjson.h"
#include "../lib/crypto.h"
#include "../lib/err.h"
#include "../lib/xalloc.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#define CURSOR_MAX 512

int paging_parse(const struct req *rq, struct resp *rs, struct page *pg)
{
    *pg = (struct page){.limit = PAGING_DEFAULT};
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
    pg->after = pg->after_id = NULL;
    db_rows_free(&pg->rows);
}

void paging_split(char *after, char **second)
{
    char *bar = after ? strchr(after, '|') : NULL;
    if (bar)
        *bar = '\0';
    *second = bar ? bar + 1 : NULL;
}

int paging_parse_keyed(const struct req *rq, struct resp *rs, struct page *pg)
{
    int e = paging_parse(rq, rs, pg);
    if (e)
        return e;
    paging_split(pg->after, &pg->after_id);
    if (pg->after && (!pg->after_id || !crypto_uuid_valid(pg->after_id))) {
        paging_free(pg);
        api_field_problem(rs, "cursor", PROBLEM_V_CURSOR, NULL);
        return api_fail_fields(rs);
    }
    return 0;
}

/* The answer from pg's rows; extra's members (its reference taken) join items and next_cursor. */
static int answer(struct resp *rs, const struct page *pg, const char *const *drop, json_t *extra)
{
    const struct db_rows *rows = &pg->rows;
    size_t n = json_array_size(rows->items);
    json_t *items = json_array();
    if (!items) {
        json_decref(extra);
        return AIDC_EINTERNAL;
    }
    for (size_t i = 0; i < n && i < (size_t)pg->limit; i++) {
        json_t *row = json_array_get(rows->items, i);
        json_t *o = drop ? json_deep_copy(row) : json_incref(row);
        for (size_t k = 0; o && drop && drop[k]; k++)
            (void)json_object_del(o, drop[k]); /* -1: it was not there */
        if (!o || json_array_append_new(items, o) != 0) {
            json_decref(items);
            json_decref(extra);
            return AIDC_EINTERNAL;
        }
    }
    json_t *next = json_null();
    if (n > (size_t)pg->limit) {
        const char *key = json_string_value(json_array_get(rows->keys, (size_t)pg->limit - 1));
        if (!key) {
            json_decref(items);
            json_decref(extra);
            return AIDC_EINTERNAL;
        }
        size_t kl = strlen(key);
        char *enc = xmalloc(kl * 4 / 3 + 8);
        crypto_b64url_encode((const unsigned char *)key, kl, enc, kl * 4 / 3 + 8);
        next = json_string(enc);
        free(enc);
    }
    json_t *body = json_pack("{s:o, s:o}", "items", items, "next_cursor", next);
    if (body && extra && json_object_update(body, extra) != 0) {
        json_decref(body);
        body = NULL;
    }
    json_decref(extra);
    if (!body)
        return AIDC_EINTERNAL;
    return resp_json(rs, MHD_HTTP_OK, body);
}

int paging_page_without(struct resp *rs, const struct page *pg, const char *const *drop)
{
    return answer(rs, pg, drop, NULL);
}

int paging_page_with(struct resp *rs, const struct page *pg, json_t *extra)
{
    return answer(rs, pg, NULL, extra);
}

int paging_page(struct resp *rs, const struct page *pg)
{
    return paging_page_without(rs, pg, NULL);
}

int paging_finish(struct resp *rs, struct page *pg, int e, const char *const *drop)
{
    /* only the database's own EINVAL, over a cursor it was given: a handler's refusal
     * of its filters (already in rs->err) stays what it is */
    if (e == AIDC_EINVAL && pg->after && !rs->err.status && !rs->err.nfields) {
        api_field_problem(rs, "cursor", PROBLEM_V_CURSOR, NULL);
        e = api_fail_fields(rs);
    } else if (!e) {
        e = paging_page_without(rs, pg, drop);
    }
    paging_free(pg);
    return e;
}
