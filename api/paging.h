/*
 * paging.h - list parameters and answers: ?limit= (default 50, 1..1000) and
 * an opaque ?cursor= (base64url of the last row's sort key); the answer is
 * {"items": [...], "next_cursor": "..." | null}. Keyset pagination: list
 * queries return up to limit+1 rows ordered by their key, with the key in an
 * internal "_cursor" column.
 */
#ifndef AIDC_PAGING_H
#define AIDC_PAGING_H

#include "../db/rowjson.h"
#include "../server/request.h"

#define PAGING_DEFAULT 50
#define PAGING_MAX     1000

/*
 * One list request from its parameters to its answer: a handler parses it,
 * has db/ fill rows (limit + 1 asked, keyed from after and after_id), and
 * finishes it; paging_free releases all of it.
 */
struct page {
    int limit;
    char *after;         /* decoded cursor (malloc'd), NULL for the first page */
    char *after_id;      /* lists keyed by (value, uuid): the cursor's uuid half (in after) */
    struct db_rows rows; /* what the list function returned */
};

/* Parse limit and cursor of rq; 0, or an error filled into rs. */
int paging_parse(const struct req *rq, struct resp *rs, struct page *pg);
void paging_free(struct page *pg);
/*
 * Answer a list from pg->rows: the first pg->limit items and, if there were
 * more, next_cursor from the last one's key.
 */
int paging_page(struct resp *rs, const struct page *pg);
/* As paging_page, with the members of extra (its reference taken) in the answer. */
int paging_page_with(struct resp *rs, const struct page *pg, json_t *extra);
/* As paging_page, without the keys in drop (NULL-terminated) in any item. */
int paging_page_without(struct resp *rs, const struct page *pg, const char *const *drop);
/*
 * The end of a list handler: e is the list function's result (or the
 * handler's own refusal, kept as it is); AIDC_EINVAL from the database over a
 * given cursor (it could not read it) becomes a 400 on cursor, success
 * the answer as paging_page_without (drop may be NULL). pg is freed; returns
 * the handler's result.
 */
int paging_finish(struct resp *rs, struct page *pg, int e, const char *const *drop);
/* Split a cursor "a|b" in place; *second points after the bar (NULL if none). */
void paging_split(char *after, char **second);
/*
 * paging_parse for lists keyed by (value, uuid): the cursor splits into
 * pg->after and pg->after_id, and one whose second half is no UUID is a 400.
 */
int paging_parse_keyed(const struct req *rq, struct resp *rs, struct page *pg);

#endif
