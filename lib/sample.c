#include "sample.h"

#include <math.h>

const pano_sample_value pano_sample_values[PANO_SAMPLE_NVALUES] = {
    {"utime", false, true},  {"stime", false, true},  {"iowait", false, true},
    {"vm", true, false},     {"rss", true, false},    {"procs", true, false},
    {"threads", true, false}, {"bread", false, false}, {"bwrite", false, false},
    {"rchar", false, false}, {"wchar", false, false}, {"syscr", false, false},
    {"syscw", false, false},
};

double pano_sample_delta(size_t i, double now, double then)
{
    if (pano_sample_values[i].seconds)
        return (double)(llround(now * 1000) - llround(then * 1000)) / 1000;
    return (double)(llround(now) - llround(then));
}
