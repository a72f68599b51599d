/*
 * curlglobal.h - libcurl's global initialisation, once per process, for
 * every module that makes HTTP calls (Slurm, registries): curl_global_init
 * must not run concurrently with itself or with handles being created.
 */
#ifndef AIDC_CURLGLOBAL_H
#define AIDC_CURLGLOBAL_H

#include <stdbool.h>

/* Initialise libcurl if not done yet; whether it is usable. Thread-safe. */
bool curlglobal_init(void);

#endif
