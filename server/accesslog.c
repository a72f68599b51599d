/* accesslog.c - the access log (see accesslog.h). */
#include "accesslog.h"

#include "../lib/log.h"
#include "../lib/sbuf.h"

void accesslog_write(const struct req *rq, const char *route, int status, double secs)
{
    if (!log_enabled(LOG_INFO))
        return;
    struct sbuf sb = SBUF_INIT;
    sbuf_puts(&sb, "\"msg\":\"request\",\"method\":");
    sbuf_json_str(&sb, rq->method);
    sbuf_puts(&sb, ",\"route\":");
    sbuf_json_str(&sb, route);
    sbuf_puts(&sb, ",\"path\":");
    sbuf_json_str(&sb, rq->path);
    sbuf_printf(&sb, ",\"status\":%d,\"duration_ms\":%.3f,\"request_id\":", status, secs * 1000.0);
    sbuf_json_str(&sb, rq->request_id);
    if (rq->actor.username) {
        sbuf_puts(&sb, ",\"actor\":");
        sbuf_json_str(&sb, rq->actor.username);
    }
    if (rq->tenant.slug) {
        sbuf_puts(&sb, ",\"tenant\":");
        sbuf_json_str(&sb, rq->tenant.slug);
    }
    sbuf_puts(&sb, ",\"source_ip\":");
    sbuf_json_str(&sb, rq->source_ip);
    /* how many times the request waited for the database: a regression in a hot
     * path's round trips shows here before it shows in its latency */
    if (rq->trips_counted)
        sbuf_printf(&sb, ",\"db_round_trips\":%lu", rq->db_round_trips);
    log_set_request(NULL, NULL);
    log_write_fields(LOG_INFO, sbuf_str(&sb));
    sbuf_free(&sb);
}
