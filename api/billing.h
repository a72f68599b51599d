/*
 * billing.h - prices, invoices and job checkpoints (see billing.c and
 * docs/billing.md).
 */
#ifndef AIDC_API_BILLING_H
#define AIDC_API_BILLING_H

#include "../server/request.h"

int api_price_list(struct req *rq, struct resp *rs);
int api_price_create(struct req *rq, struct resp *rs);
int api_invoice_create(struct req *rq, struct resp *rs);
int api_invoice_list(struct req *rq, struct resp *rs);
int api_invoice_get(struct req *rq, struct resp *rs);
int api_invoice_finalize(struct req *rq, struct resp *rs);
int api_job_checkpoint(struct req *rq, struct resp *rs);

#endif
