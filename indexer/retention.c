#include "retention.h"

#include "summary.h"

#include <math.h>
#include <string.h>

int pano_retention_stream_of(const char *index, const char *const bases[PANO_N_STREAMS],
                             double *period_end)
{
    for (int s = 0; s < PANO_N_STREAMS; s++) {
        size_t n = strlen(bases[s]);
        if (strncmp(index, bases[s], n) != 0 || index[n] != '-')
            continue;
        /* the suffix says its period: whatever the setting is now, an index
         * written under another one still expires */
        double start;
        for (int p = PANO_PERIOD_DAY; p <= PANO_PERIOD_YEAR; p++)
            if (pano_period_parse((pano_period)p, index + n + 1, &start, period_end))
                return s;
    }
    return -1;
}

bool pano_retention_expired(const char *index, const char *const bases[PANO_N_STREAMS],
                            const pano_stream_policy policies[PANO_N_STREAMS], double now)
{
    double end;
    int s = pano_retention_stream_of(index, bases, &end);
    return s >= 0 && policies[s].retention > 0 && end + policies[s].retention < now;
}

long pano_retention_shards(const pano_stream_policy policies[PANO_N_STREAMS], int shards,
                           int replicas, bool summaries, long *forever_per_year)
{
    /* the shortest length of each period, and how many a year has */
    static const double shortest[] = {86400, 28 * 86400.0, 365 * 86400.0};
    static const long per_year[] = {366, 12, 1};
    long per_index = (long)shards * (1 + replicas), kept = 0;
    *forever_per_year = 0;
    for (int s = 0; s < PANO_N_STREAMS; s++) {
        pano_period p = policies[s].period;
        long copies = 1 + (summaries && pano_summary_stream(s));
        if (policies[s].retention > 0)
            /* the current period, those within the retention, and the one
             * that ended just less than the retention ago */
            kept += copies * per_index * (long)(ceil(policies[s].retention / shortest[p]) + 2);
        else
            *forever_per_year += copies * per_index * per_year[p];
    }
    return kept;
}
