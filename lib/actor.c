/* actor.c - the actor's memory and its roles as text. */
#include "actor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void actor_free(struct actor *a)
{
    free(a->username);
    for (size_t i = 0; i < a->nmemberships; i++)
        free(a->memberships[i].slug);
    free(a->memberships);
    memset(a, 0, sizeof *a);
}

void actor_roles_csv(unsigned roles, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s%s%s%s", roles & GR_PLATFORM_ADMIN ? "platform_admin" : "",
             (roles & GR_PLATFORM_ADMIN) && (roles & (GR_FINANCE | GR_AUDITOR)) ? "," : "",
             roles & GR_FINANCE ? "finance" : "",
             (roles & GR_FINANCE) && (roles & GR_AUDITOR) ? "," : "",
             roles & GR_AUDITOR ? "auditor" : "");
}
