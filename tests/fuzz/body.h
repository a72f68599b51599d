/*
 * body.h - a JSON request body as server/dispatch.c reads it (duplicate keys
 * refused, an object required), and the error answer it renders.
 */
#ifndef AIDC_FUZZ_BODY_H
#define AIDC_FUZZ_BODY_H

#include "server/problem.h"
#include "server/request.h"

#include <jansson.h>
#include <stdlib.h>

/* The body as dispatch parses it, or NULL where dispatch answers 400 itself. */
static inline json_t *fuzz_body(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    json_t *j = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
    if (j && !json_is_object(j)) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* Render rs's error as the dispatcher does: it must be valid JSON. Frees rs. */
static inline void fuzz_render(struct resp *rs)
{
    if (rs->err.status || rs->err.nfields || rs->err.detail) {
        char *doc = problem_render(&rs->err, "fuzz");
        json_t *j = doc ? json_loads(doc, 0, NULL) : NULL;
        if (!j)
            abort(); /* a client must always get a valid problem document */
        json_decref(j);
        free(doc);
    }
    resp_free(rs);
}

#endif
