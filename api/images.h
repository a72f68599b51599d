/* images.h - the images routes (api/routes.c). */
#ifndef AIDC_API_IMAGES_H
#define AIDC_API_IMAGES_H

#include "../server/request.h"

int api_image_list(struct req *rq, struct resp *rs);
int api_image_tenant_list(struct req *rq, struct resp *rs);
int api_image_create(struct req *rq, struct resp *rs);
int api_image_get(struct req *rq, struct resp *rs);
int api_image_update(struct req *rq, struct resp *rs);
int api_image_delete(struct req *rq, struct resp *rs);

int api_registry_create(struct req *rq, struct resp *rs);
int api_registry_list(struct req *rq, struct resp *rs);
int api_registry_get(struct req *rq, struct resp *rs);
int api_registry_sync(struct req *rq, struct resp *rs);

#endif
