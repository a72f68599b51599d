/*
 * sync.h - the registry sync: reads a registry's catalog, tags, manifests
 * and configs (images/registry.h) and brings the images table in line:
 * new tags are added (public under a platform prefix, a tenant's under
 * <tenant-prefix><slug>/), moved tags take their new digest (unless the
 * image is immutable: a conflict), tags gone upstream are flagged, never
 * deleted. Only what the registry answered for changes: a repository that
 * could not be listed keeps its images as they were. Incremental: a tag
 * whose digest is unchanged costs one HEAD request.
 *
 * The worker claims one registry at a time (FOR UPDATE SKIP LOCKED, so
 * several aidcd replicas share the registries and a crashed sync is taken
 * over after SYNC_STALE_SECONDS), syncs those asked for (POST
 * /registries/{name}/sync, NOTIFY aidc_registries) and every
 * AIDC_REGISTRY_SYNC_SECONDS, shows its progress in the registry row and
 * leaves a report there (docs/images.md).
 */
#ifndef AIDC_SYNC_H
#define AIDC_SYNC_H

#include "../lib/config.h"

#include <jansson.h>
#include <stdbool.h>

struct db;
struct regsync;

#define SYNC_STALE_SECONDS 300

/*
 * The tenant slug a repository belongs to under options (NULL: public, *ok
 * false: it maps to nothing - no public prefix, no tenant prefix + slug).
 * slug receives the candidate slug (a tenant may not exist by that name).
 */
bool regsync_owner(const json_t *options, const char *repository, bool *public_repo, char *slug,
                   size_t slugsz);
/* Whether options of a registry are valid; msg says why not. */
bool regsync_options_valid(const json_t *options, char *msg, size_t msgsz);

/* Claim and sync one due registry: 1 when one was synced, 0 when none was due, or an aidc_err. */
int regsync_run(struct db *db, int every_s);

struct worker;
struct worker *regsync_start(const struct config *cfg);
struct sbuf;
/* aidc_registry_syncs_total{result}. */
void regsync_metrics(struct sbuf *sb);

#endif
