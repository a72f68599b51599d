/*
 * exportcheck.h - checking an NDJSON audit export offline (aidcd audit
 * verify-export): every event's hash recomputed from its line, every link
 * between consecutive chain positions, every checkpoint against the event at
 * its position and (with a key) its signature, and the trailer's count,
 * digest and signature - so a truncated, reordered or edited export fails.
 * Reads line by line: memory does not grow with the export.
 */
#ifndef AIDC_AUDIT_EXPORTCHECK_H
#define AIDC_AUDIT_EXPORTCHECK_H

#include "sign.h"

#include <stdbool.h>
#include <stdio.h>

struct export_check {
    bool ok;
    long long lines, events, sealed, unsealed, links, checkpoints;
    bool signed_export;  /* the trailer's signature verified */
    long long bad_line;  /* 1-based, 0 = none */
    long long bad_event; /* event id at bad_line, 0 = none */
    char reason[300];
};

/* Check f; key NULL: signatures unchecked. Returns 0 (verdict in r) or -1 (read error). */
int export_check(FILE *f, const struct sign_key *key, struct export_check *r);

/* The message an export trailer's signature covers (written by the export, checked here). */
void exportcheck_message(long long rows, const char *digest_hex, char *out, size_t n);

#endif
