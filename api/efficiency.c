/* efficiency.c - the idle-GPU report (see efficiency.h). */
#include "efficiency.h"

#include "../db/efficiency.h"
#include "paging.h"

static int idle(struct req *rq, struct resp *rs, const char *tenant_id)
{
    struct page pg;
    int e = paging_parse_keyed(rq, rs, &pg);
    if (e)
        return e;
    e = db_eff_idle_list(rq->db, tenant_id, pg.after, pg.after_id, pg.limit, &pg.rows);
    return paging_finish(rs, &pg, e, NULL);
}

int api_eff_idle_tenant(struct req *rq, struct resp *rs)
{
    return idle(rq, rs, rq->tenant.id);
}

int api_eff_idle_all(struct req *rq, struct resp *rs)
{
    return idle(rq, rs, NULL);
}
