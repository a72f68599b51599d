/* identity.h - login, logout and "who am I". */
#ifndef AIDC_API_IDENTITY_H
#define AIDC_API_IDENTITY_H

#include "../server/request.h"

int api_identity_login(struct req *rq, struct resp *rs);
int api_identity_logout(struct req *rq, struct resp *rs);
int api_identity_me(struct req *rq, struct resp *rs);

#endif
