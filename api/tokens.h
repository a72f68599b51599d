/* tokens.h - a user's own API tokens. */
#ifndef AIDC_API_TOKENS_H
#define AIDC_API_TOKENS_H

#include "../server/request.h"

int api_token_create(struct req *rq, struct resp *rs);
int api_token_list(struct req *rq, struct resp *rs);
int api_token_delete(struct req *rq, struct resp *rs);

#endif
