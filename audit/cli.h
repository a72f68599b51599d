/*
 * cli.h - `aidcd audit ...`: verify the chain in the database, verify an
 * export offline, make a signing key, print its public key, seal now.
 */
#ifndef AIDC_AUDIT_CLI_H
#define AIDC_AUDIT_CLI_H

#include "../lib/config.h"

/* argv[0] is "audit". Returns the exit status. */
int audit_cli(const struct config *cfg, int argc, char **argv);
/* The usage lines for aidcd --help. */
extern const char audit_cli_usage[];

#endif
