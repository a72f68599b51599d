/*
 * auditsql.h (db) - what db/audit*.c share and nobody else sees: the event
 * as SQL builds it (the one shape the API shows and the chain hashes), the
 * checkpoint columns.
 */
#ifndef AIDC_DB_AUDITSQL_H
#define AIDC_DB_AUDITSQL_H

#define RFC3339(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"

/*
 * An event as the API shows it and the chain hashes it: every stored column
 * is in it, so no column can change unnoticed. e is the event, c its chain
 * entry (NULL columns while unsealed).
 */
#define EVENT_JSON                                                                            \
    "json_build_object('id', e.id, 'seq', c.seq, 'hash', encode(c.hash, 'hex'),"              \
    " 'ts', " RFC3339("e.ts") ","                                                             \
    " 'actor', json_build_object('user', e.actor_username, 'user_id', e.actor_user_id,"       \
    "   'token_id', e.actor_token_id, 'roles', e.actor_roles),"                               \
    " 'tenant', e.tenant_slug, 'tenant_id', e.tenant_id, 'source_ip', host(e.source_ip),"     \
    " 'user_agent', e.user_agent, 'request_id', e.request_id, 'action', e.action,"            \
    " 'resource', json_build_object('type', e.resource_type, 'id', e.resource_id),"           \
    " 'outcome', e.outcome, 'status', e.status, 'details', e.details,"                        \
    " 'record_id', e.record_id)"

#define CHAIN_JOIN "LEFT JOIN audit_chain c ON c.event_ts = e.ts AND c.event_id = e.id"

/* A checkpoint's columns, in the order of enum audit_cp_col. */
#define CHECKPOINT_COLS                                                                       \
    "id, " RFC3339("ts") " AS ts, seq, encode(head_hash, 'hex') AS head_hash, alg, key_id,"   \
    " encode(signature, 'hex') AS signature"

enum audit_cp_col { CP_ID, CP_TS, CP_SEQ, CP_HEAD_HASH, CP_ALG, CP_KEY_ID, CP_SIGNATURE };

#endif
