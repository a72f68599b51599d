/*
 * audit.h (api) - the audit endpoints: search, streamed export, chain
 * verification, signed checkpoints and their public key, node command
 * ingest and search. Every read of audit data is itself audited
 * (RF_AUDIT_READ in the route table).
 */
#ifndef AIDC_API_AUDIT_H
#define AIDC_API_AUDIT_H

#include "../server/request.h"

int api_audit_events(struct req *rq, struct resp *rs);
int api_audit_export(struct req *rq, struct resp *rs);
int api_audit_verify(struct req *rq, struct resp *rs);
int api_audit_checkpoints(struct req *rq, struct resp *rs);
int api_audit_public_key(struct req *rq, struct resp *rs);
int api_audit_ingest(struct req *rq, struct resp *rs);
int api_audit_commands(struct req *rq, struct resp *rs);

#endif
