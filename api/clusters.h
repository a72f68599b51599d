/* clusters.h - clusters and their inventory. */
#ifndef AIDC_API_CLUSTERS_H
#define AIDC_API_CLUSTERS_H

#include "../server/request.h"

int api_cluster_create(struct req *rq, struct resp *rs);
int api_cluster_list(struct req *rq, struct resp *rs);
int api_cluster_get(struct req *rq, struct resp *rs);
int api_cluster_sync(struct req *rq, struct resp *rs);
/* The {name} of a cluster path into *out; 0, or a 400 answered into rs. */
int api_cluster_name(struct req *rq, struct resp *rs, const char **out);

#endif
