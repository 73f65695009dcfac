#include "clock.h"

#include <time.h>

double pano_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* cannot fail for this clock id */
    return (double)ts.tv_sec + (double)(ts.tv_nsec / 1000) / 1e6;
}

double pano_monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* cannot fail for this clock id */
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
