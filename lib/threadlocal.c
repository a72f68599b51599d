/* threadlocal.c - per-thread blocks (see threadlocal.h). */
#include "threadlocal.h"

#include "xalloc.h"

#include <stdlib.h>

void *threadlocal_block(pthread_key_t key, size_t size)
{
    void *p = pthread_getspecific(key);
    if (!p) {
        p = xcalloc(1, size);
        if (pthread_setspecific(key, p) != 0)
            abort();
    }
    return p;
}
