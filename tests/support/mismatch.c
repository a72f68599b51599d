/*
 * mismatch.c - the mismatches of the running test (mismatch.h). Check runs
 * each test in a process of its own (CK_FORK) or one after the other, so
 * one set of them per process is enough.
 */
#include "tests/support/mismatch.h"

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static char errs[3500]; /* Check carries at most about 4 KiB of message */
static size_t errs_len;
static int nerrs;

void note(const char *f, ...)
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

void reset_notes(void)
{
    errs[0] = '\0';
    errs_len = 0;
    nerrs = 0;
}

void finish(void)
{
    ck_assert_msg(nerrs == 0, "%d mismatch(es):%s", nerrs, errs);
}
