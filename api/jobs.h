/* jobs.h - the job endpoints (see jobs.c). */
#ifndef AIDC_API_JOBS_H
#define AIDC_API_JOBS_H

#include "../server/request.h"

#include <jansson.h>
#include <stdbool.h>

int api_job_submit(struct req *rq, struct resp *rs);
int api_job_list(struct req *rq, struct resp *rs);
int api_job_get(struct req *rq, struct resp *rs);
int api_job_events(struct req *rq, struct resp *rs);
int api_job_cancel(struct req *rq, struct resp *rs);
int api_job_logs(struct req *rq, struct resp *rs);

/* The variable of a session's job holding the app's secret (never shown). */
#define APPSESSION_SECRET_ENV "AIDC_SESSION_TOKEN"

struct jobspec;
/*
 * Submit js as a job of kind ("interactive", or NULL: batch) in the
 * request's tenant: every check of POST /jobs (project, mounts, image,
 * clusters, quotas), then the insert. *job receives it (new reference);
 * 0, or an error with its problem in rs.
 */
int api_job_submit_spec(struct req *rq, struct resp *rs, const struct jobspec *js, const char *kind,
                        json_t **job);
/* The job.submit audit details of js and the job it made (new reference). */
json_t *api_job_submit_audit(const struct jobspec *js, const json_t *job);
/* job as the caller may see it (env values hidden from others), in place; returns it. */
json_t *api_job_shown(const struct req *rq, json_t *job);

/* Whether the caller sees all of a job of owner: its owner, tenant and platform admins. */
bool api_job_sees_all(const struct req *rq, const char *owner);
/* 404 for job id of the request's tenant. */
int api_job_not_found(struct req *rq, struct resp *rs, const char *id);

struct db_job_placement;
struct backend_ops;
/*
 * Where job id of the request's tenant runs: its placement (options_json
 * taken), its cluster's options parsed (new reference, NULL when not placed)
 * and backend (NULL when not placed). 0, or its 404 in rs.
 */
int api_job_placed(struct req *rq, struct resp *rs, const char *id, struct db_job_placement *pl,
                   json_t **options, const struct backend_ops **ops);

#endif
