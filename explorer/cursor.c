#include "cursor.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int64_t ms(double seconds) { return (int64_t)llround(seconds * 1000); }

void explorer_cursor_format(const explorer_cursor *c, char *out, size_t size)
{
    snprintf(out, size, "%" PRId64 "-%" PRId64 "-%" PRId64 "-%" PRId64, c->at.events,
             c->at.summarized, ms(c->at.latest), ms(c->until));
}

/* A whole number of at most 18 digits at *p, up to the character stop. */
static bool number(const char **p, char stop, int64_t *out)
{
    const char *s = *p;
    int64_t v = 0;
    size_t digits = 0;
    for (; *s >= '0' && *s <= '9'; s++, digits++) {
        if (digits == 18)
            return false;
        v = v * 10 + (*s - '0');
    }
    if (digits == 0 || *s != stop)
        return false;
    *out = v;
    *p = stop ? s + 1 : s;
    return true;
}

bool explorer_cursor_parse(const char *text, explorer_cursor *out)
{
    int64_t events, summarized, latest, until;
    const char *p = text;
    if (!number(&p, '-', &events) || !number(&p, '-', &summarized) ||
        !number(&p, '-', &latest) || !number(&p, '\0', &until))
        return false;
    out->at.events = events;
    out->at.summarized = summarized;
    out->at.latest = (double)latest / 1000;
    out->until = (double)until / 1000;
    return true;
}

bool explorer_cursor_holds(const explorer_cursor *c, const pano_changes *now, double t)
{
    return c->at.events == now->events && c->at.summarized == now->summarized &&
           ms(c->at.latest) == ms(now->latest) &&
           (c->until <= 0 || t < c->until);
}

double explorer_cursor_until(const pano_jobs *jobs)
{
    double every = INFINITY;
    for (size_t i = 0; i < jobs->n; i++) {
        const pano_job *j = &jobs->jobs[i];
        if (j->state == PANO_JOB_RUNNING && j->from_monitor)
            every = fmin(every, j->interval);
    }
    if (isinf(every))
        return 0;
    return jobs->now + fmin(fmax(every, 1), EXPLORER_CLOCK_RECHECK);
}
