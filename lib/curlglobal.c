/* curlglobal.c - libcurl's global initialisation (see curlglobal.h). */
#include "curlglobal.h"

#include <curl/curl.h>
#include <pthread.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static CURLcode init_rc = CURLE_FAILED_INIT;

static void init(void)
{
    init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

bool curlglobal_init(void)
{
    pthread_once(&once, init);
    return init_rc == CURLE_OK;
}
