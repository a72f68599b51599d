/*
 * paging.h - list parameters and answers: ?limit= (default 50, 1..1000) and
 * an opaque ?cursor= (base64url of the last row's sort key); the answer is
 * {"items": [...], "next_cursor": "..." | null}. Keyset pagination: list
 * queries return up to limit+1 rows ordered by their key, with the key in an
 * internal "_cursor" column.
 */
#ifndef AIDC_PAGING_H
#define AIDC_PAGING_H

#include "../server/request.h"

#include <libpq-fe.h>

#define PAGING_DEFAULT 50
#define PAGING_MAX 1000

struct page {
    int limit;
    char *after; /* decoded cursor (malloc'd), NULL for the first page */
};

/* Parse limit and cursor of rq; 0, or an error filled into rs. */
int paging_parse(const struct req *rq, struct resp *rs, struct page *pg);
void paging_free(struct page *pg);
/* Answer a list: items from r (at most pg->limit) and next_cursor. */
int paging_answer(struct resp *rs, PGresult *r, const struct page *pg);
/* As paging_answer, for rows whose first column is the item, built as JSON in SQL. */
int paging_answer_prebuilt(struct resp *rs, PGresult *r, const struct page *pg);
/* As paging_answer, without the keys in drop (NULL-terminated) in any item. */
int paging_answer_without(struct resp *rs, PGresult *r, const struct page *pg,
                          const char *const *drop);
/* Split a cursor "a|b" in place; *second points after the bar (NULL if none). */
void paging_split(char *after, char **second);
/*
 * paging_parse for lists keyed by (value, uuid): the cursor splits into
 * pg->after and *id, and one whose second half is no UUID is a 400.
 */
int paging_parse_keyed(const struct req *rq, struct resp *rs, struct page *pg, char **id);
/*
 * The end of a keyed list: e is the list query's result; AIDC_EINVAL (the
 * database could not read the cursor) becomes a 400 on cursor, success the
 * answer. r and pg are freed; returns the handler's result.
 */
int paging_answer_keyed(struct resp *rs, PGresult *r, struct page *pg, int e);

#endif
