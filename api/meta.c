/* meta.c - unauthenticated operational endpoints. */
#include "meta.h"

#include "../db/db.h"
#include "../db/health.h"
#include "../db/migrate.h"
#include "../lib/embed.h"
#include "../lib/xalloc.h"
#include "../server/http.h"
#include "../server/metrics.h"

#include <microhttpd.h>
#include <string.h>

int api_meta_healthz(struct req *rq, struct resp *rs)
{
    (void)rq;
    return resp_json(rs, MHD_HTTP_OK, json_pack("{s:s}", "status", "ok"));
}

int api_meta_readyz(struct req *rq, struct resp *rs)
{
    int version = 0;
    int e = db_ensure(rq->db);
    if (!e)
        e = db_health_schema_version(rq->db, &version);
    const char *why = NULL;
    if (http_draining())
        why = "shutting down";
    else if (e)
        why = "database unavailable";
    else if (version != migrate_latest_version())
        why = "database schema is not this server's version";
    if (why) {
        rs->err.retry_after = 2;
        return resp_json(rs, MHD_HTTP_SERVICE_UNAVAILABLE,
                         json_pack("{s:s, s:s, s:i, s:i}", "status", "not ready", "reason", why,
                                   "schema_version", version, "expected_schema_version",
                                   migrate_latest_version()));
    }
    return resp_json(rs, MHD_HTTP_OK,
                     json_pack("{s:s, s:i}", "status", "ready", "schema_version", version));
}

int api_meta_metrics(struct req *rq, struct resp *rs)
{
    rs->raw = metrics_render(rq->db);
    rs->raw_len = strlen(rs->raw);
    rs->content_type = "text/plain; version=0.0.4; charset=utf-8";
    rs->status = MHD_HTTP_OK;
    return 0;
}

int api_meta_openapi(struct req *rq, struct resp *rs)
{
    (void)rq;
    rs->raw = xmalloc(embed_openapi[0].len + 1);
    memcpy(rs->raw, embed_openapi[0].data, embed_openapi[0].len + 1);
    rs->raw_len = embed_openapi[0].len;
    rs->content_type = "application/json";
    rs->status = MHD_HTTP_OK;
    return 0;
}
