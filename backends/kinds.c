/*
 * kinds.c - the backends this build has, by cluster kind (backend_find).
 * Apart from backend.c, so that what the backends share links without
 * every backend (tests/fuzz links the Slurm backend alone).
 */
#include "backend.h"

#include "kubernetes.h"
#include "local.h"
#include "slurm.h"

#include <string.h>

static const struct backend_ops *const all[] = {&backend_local, &backend_slurm,
                                                &backend_kubernetes, NULL};

const struct backend_ops *backend_find(const char *kind)
{
    for (size_t i = 0; kind && all[i]; i++)
        if (strcmp(all[i]->kind, kind) == 0)
            return all[i];
    return NULL;
}
