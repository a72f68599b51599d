/*
 * auditingest.c - POST /api/v1/audit/commands: node records from agents
 * (deploy/agent/), as NDJSON or {"commands": [...]}. A batch is stored all
 * or nothing; a bad record refuses it with the record named, so an agent
 * never half-delivers a spool file. Records resent with the same record_id
 * and ts are dropped by the database (counted as duplicates). A token bound
 * to a node writes only records naming that host.
 */
#include "audit.h"

#include "../db/audit.h"
#include "../lib/config.h"
#include "../lib/err.h"
#include "../lib/jsonlimit.h"
#include "../lib/sbuf.h"
#include "../server/auth.h"
#include "auditrecord.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static bool is_ndjson(const char *ct)
{
    return ct && strncasecmp(ct, "application/x-ndjson", 20) == 0;
}

/* The first record naming a host the token may not speak of, or -1. */
static long other_host(const struct req *rq, const json_t *records)
{
    size_t i;
    json_t *r;
    json_array_foreach(records, i, r)
    {
        if (!auth_node_allowed(&rq->actor, json_string_value(json_object_get(r, "host"))))
            return (long)i;
    }
    return -1;
}

int api_audit_ingest(struct req *rq, struct resp *rs)
{
    size_t max = (size_t)rq->cfg->audit_ingest_max_records;
    time_t now = time(NULL);
    time_t oldest = now - (time_t)rq->cfg->audit_retention_days * 86400;
    /* before any parsing: the batch's depth, and its values, 64 a record on top of
     * AIDC_JSON_MAX_VALUES (NDJSON lines are counted together) */
    int e = rq->body ? api_json_shape(rs, rq->body, rq->body_len, rq->cfg->json_max_depth + 2,
                                      rq->cfg->json_max_values + 64 * (long)max)
                     : 0;
    if (e)
        return e;
    json_t *records = NULL;
    e = auditrecord_parse(rq->body, rq->body_len, is_ndjson(rq->content_type), max, now, oldest, rs,
                          &records);
    if (e)
        return e;
    long other = other_host(rq, records);
    if (other >= 0) {
        const char *host =
            json_string_value(json_object_get(json_array_get(records, (size_t)other), "host"));
        e = api_problem(rs, PROBLEM_AUDIT_RECORD_OTHER_HOST,
                        json_pack("{s:I, s:s, s:s}", "record", (json_int_t)other + 1, "host",
                                  host ? host : "", "node", rq->actor.token_node));
        json_decref(records);
        return e;
    }
    size_t total = json_array_size(records);
    char *text = json_dumps(records, JSON_COMPACT);
    json_decref(records);
    if (!text)
        return AIDC_EINTERNAL;
    char roles[64];
    actor_roles_csv(rq->actor.roles, roles, sizeof roles);
    struct db_audit_who who = {
        .user_id = rq->actor.user_id[0] ? rq->actor.user_id : NULL,
        .username = rq->actor.username,
        .token_id = rq->actor.token_id[0] ? rq->actor.token_id : NULL,
        .roles = roles,
        .source_ip = rq->source_ip[0] ? rq->source_ip : NULL,
        .user_agent = rq->user_agent,
        .request_id = rq->request_id,
    };
    long long accepted = 0;
    e = db_audit_ingest(rq->db, text, &who, &accepted);
    free(text);
    if (e == AIDC_EINVAL) { /* PostgreSQL's words: one cut short stays valid UTF-8 */
        struct sbuf why = SBUF_INIT;
        sbuf_utf8(&why, db_last_error(rq->db)->message);
        e = api_problem(rs, PROBLEM_AUDIT_RECORD_REFUSED,
                        json_pack("{s:s}", "reason", sbuf_str(&why)));
        sbuf_free(&why);
        return e;
    }
    if (e)
        return e;
    resp_audit(
        rs, "audit_log", "commands",
        json_pack("{s:I, s:I}", "records", (json_int_t)total, "accepted", (json_int_t)accepted));
    return resp_json(rs, MHD_HTTP_ACCEPTED,
                     json_pack("{s:I, s:I}", "accepted", (json_int_t)accepted, "duplicates",
                               (json_int_t)((long long)total - accepted)));
}
