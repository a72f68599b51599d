/* gputype.c - GPU type names (see gputype.h). */
#include "gputype.h"

#include <string.h>

bool gputype_valid(const char *t)
{
    size_t n = strlen(t);
    if (n < 1 || n > 32 || !((t[0] >= 'a' && t[0] <= 'z') || (t[0] >= '0' && t[0] <= '9')))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= '0' && t[i] <= '9') || t[i] == '.' ||
              t[i] == '_' || t[i] == '-'))
            return false;
    return true;
}
