#include "backoff.h"

#include <sys/random.h>
#include <unistd.h>

double backoff_next(double backoff, double max)
{
    return backoff * 2 > max ? max : backoff * 2;
}

double backoff_jitter(void)
{
    unsigned short r = 0;
    if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
        r = (unsigned short)getpid();
    return 0.5 + r / 65536.0;
}

double backoff_deadline(double deadline, bool stopping, double now, double drain_timeout)
{
    return stopping && !deadline ? now + drain_timeout : deadline;
}

bool backoff_expired(double deadline, double now)
{
    return deadline && now >= deadline;
}
