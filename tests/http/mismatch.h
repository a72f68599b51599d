/*
 * mismatch.h - collecting the mismatches of a table-driven test: note() prints
 * each at once (MISMATCH: ...) and keeps it for finish(), which fails the test
 * with all of them, so one run lists everything that is wrong.
 */
#ifndef AIDC_TEST_MISMATCH_H
#define AIDC_TEST_MISMATCH_H

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static char errs[3500]; /* Check carries at most about 4 KiB of message */
static size_t errs_len;
static int nerrs;

static void note(const char *f, ...) __attribute__((format(printf, 1, 2), unused));

static void note(const char *f, ...)
{
    char line[1200];
    va_list ap;
    va_start(ap, f);
    vsnprintf(line, sizeof line, f, ap);
    va_end(ap);
    fprintf(stderr, "MISMATCH: %s\n", line);
    nerrs++;
    if (errs_len + strlen(line) + 4 < sizeof errs)
        errs_len += (size_t)snprintf(errs + errs_len, sizeof errs - errs_len, "\n  %s", line);
    else if (errs_len + 8 < sizeof errs && !strstr(errs, "\n  ..."))
        errs_len += (size_t)snprintf(errs + errs_len, sizeof errs - errs_len, "\n  ...");
}

static inline void reset_notes(void)
{
    errs[0] = '\0';
    errs_len = 0;
    nerrs = 0;
}

static inline void finish(void)
{
    ck_assert_msg(nerrs == 0, "%d mismatch(es):%s", nerrs, errs);
}

#endif
