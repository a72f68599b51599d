/* projects.h - projects of a tenant. */
#ifndef AIDC_API_PROJECTS_H
#define AIDC_API_PROJECTS_H

#include "../server/request.h"

int api_project_create(struct req *rq, struct resp *rs);
int api_project_list(struct req *rq, struct resp *rs);
int api_project_get(struct req *rq, struct resp *rs);
int api_project_update(struct req *rq, struct resp *rs);
int api_project_delete(struct req *rq, struct resp *rs);

#endif
