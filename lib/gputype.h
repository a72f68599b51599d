/*
 * gputype.h - the name of a GPU type ("a100", "h100-80g", "t4"), as jobs,
 * quotas, prices and every backend's node inventory spell it.
 */
#ifndef AIDC_GPUTYPE_H
#define AIDC_GPUTYPE_H

#include <stdbool.h>

/* A GPU type name: ^[a-z0-9][a-z0-9._-]{0,31}$ */
bool gputype_valid(const char *s);

#endif
