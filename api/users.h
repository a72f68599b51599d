/* users.h - user accounts (platform admins). */
#ifndef AIDC_API_USERS_H
#define AIDC_API_USERS_H

#include "../server/request.h"

int api_user_create(struct req *rq, struct resp *rs);
int api_user_list(struct req *rq, struct resp *rs);
int api_user_get(struct req *rq, struct resp *rs);
int api_user_update(struct req *rq, struct resp *rs);

#endif
