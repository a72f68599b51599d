/*
 * threadlocal.h - a zeroed block of memory per thread under a pthread key,
 * made at the thread's first use; the key's destructor frees it when the
 * thread ends.
 */
#ifndef AIDC_THREADLOCAL_H
#define AIDC_THREADLOCAL_H

#include <pthread.h>
#include <stddef.h>

/* The calling thread's block of size bytes under key (aborts if it cannot be kept). */
void *threadlocal_block(pthread_key_t key, size_t size);

#endif
