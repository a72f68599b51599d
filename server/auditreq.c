/* auditreq.c - audit events of an HTTP request (see auditreq.h). */
#include "auditreq.h"

static int record(struct req *rq, const struct audit_event *ev, bool queue)
{
    struct audit_origin o = {
        .actor = &rq->actor,
        .tenant_id = rq->tenant.id,
        .tenant_slug = rq->tenant.slug,
        .source_ip = rq->source_ip,
        .user_agent = rq->user_agent,
        .request_id = rq->request_id,
    };
    return audit_record(rq->db, &o, ev, queue);
}

int auditreq_record(struct req *rq, const struct audit_event *ev)
{
    return record(rq, ev, true);
}

int auditreq_record_now(struct req *rq, const struct audit_event *ev)
{
    return record(rq, ev, false);
}
