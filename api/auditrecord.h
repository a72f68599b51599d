/*
 * auditrecord.h - the body of POST /api/v1/audit/commands checked, without
 * the database: node records from agents (deploy/agent/) as NDJSON or
 * {"commands": [...]}. Each record's fields are checked (types, lengths in
 * characters, RFC 3339 times within the retention period and at most an hour
 * ahead, ids) and put in the shape db_audit_ingest stores. Pure, so it is
 * fuzzed (tests/fuzz/fuzz_ingest.c) and unit-tested on its own.
 */
#ifndef AIDC_API_AUDITRECORD_H
#define AIDC_API_AUDITRECORD_H

#include "../server/request.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/*
 * Check body[0..len) (NDJSON when ndjson, else {"commands": [...]}), at most
 * max records, times from oldest to now plus an hour. 0 with *records (a new
 * array, never empty), or a 400 filled into rs (its aidc_err returned; bad
 * records named "line N" or "commands[N]", ten at most), or AIDC_EINTERNAL.
 */
int auditrecord_parse(const char *body, size_t len, bool ndjson, size_t max, time_t now,
                      time_t oldest, struct resp *rs, json_t **records);

#endif
