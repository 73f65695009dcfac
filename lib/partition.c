#include "partition.h"

#include "event.h"
#include "mem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const pano_streams[PANO_N_STREAMS + 1] = {
    "kickstart", "samples", "stampede", "darshan",     "transfer",
    "custom",    "other",   "unassigned", "dead-letter", NULL,
};

const char *pano_event_stream(const char *event_name)
{
    if (strcmp(event_name, "kickstart.inv.online") == 0)
        return "samples";
    return pano_event_family(event_name);
}

int pano_stream_index(const char *stream)
{
    for (int i = 0; i < PANO_N_STREAMS; i++)
        if (strcmp(pano_streams[i], stream) == 0)
            return i;
    return -1;
}

static bool parse_period(const char *text, pano_period *out)
{
    static const char *const names[] = {"day", "month", "year"};
    for (int i = 0; i < 3; i++)
        if (strcmp(text, names[i]) == 0) {
            *out = (pano_period)i;
            return true;
        }
    return false;
}

/* Apply one "DEFAULT[,STREAM=VALUE...]" setting: set(value, policy) for the
 * default first, then per stream. */
static int apply_setting(const pano_config *cfg, const char *key, pano_stream_policy *out,
                         bool (*set)(const char *value, pano_stream_policy *p), char *err,
                         size_t errlen)
{
    const char *text = pano_config_str(cfg, key);
    char *copy = pano_strdup(text ? text : ""), *save = NULL;
    int rc = 0;
    bool first = true;
    for (char *item = strtok_r(copy, ",", &save); item && rc == 0;
         item = strtok_r(NULL, ",", &save), first = false) {
        item += strspn(item, " ");
        char *eq = strchr(item, '=');
        if (!eq) {
            bool valid = first;
            for (int i = 0; i < PANO_N_STREAMS && valid; i++)
                valid = set(item, &out[i]);
            if (!valid) {
                snprintf(err, errlen, "%s: '%s' is not %s", key, item,
                         first ? "a value" : "STREAM=VALUE (only the first item is a default)");
                rc = -1;
            }
            continue;
        }
        *eq = '\0';
        int s = pano_stream_index(item);
        if (s < 0) {
            snprintf(err, errlen, "%s: no stream '%s' (streams: kickstart samples stampede darshan "
                                  "transfer custom other unassigned dead-letter)", key, item);
            rc = -1;
        } else if (!set(eq + 1, &out[s])) {
            snprintf(err, errlen, "%s: '%s' is not a value for %s", key, eq + 1, item);
            rc = -1;
        }
    }
    free(copy);
    return rc;
}

static bool set_period(const char *value, pano_stream_policy *p)
{
    return parse_period(value, &p->period);
}

static bool set_retention(const char *value, pano_stream_policy *p)
{
    double d = pano_config_parse_duration(value);
    if (d < 0)
        return false;
    p->retention = d;
    return true;
}

int pano_stream_policies(const pano_config *cfg, pano_stream_policy out[PANO_N_STREAMS],
                         char *err, size_t errlen)
{
    for (int i = 0; i < PANO_N_STREAMS; i++)
        out[i] = (pano_stream_policy){PANO_PERIOD_MONTH, 0};
    if (apply_setting(cfg, "pano.indexer.partition", out, set_period, err, errlen) < 0 ||
        apply_setting(cfg, "pano.indexer.retention", out, set_retention, err, errlen) < 0)
        return -1;
    return 0;
}

static struct tm utc(double ts)
{
    time_t t = (time_t)floor(ts);
    struct tm tm;
    gmtime_r(&t, &tm);
    return tm;
}

void pano_period_suffix(pano_period p, double ts, char *out, size_t size)
{
    struct tm tm = utc(ts);
    if (p == PANO_PERIOD_YEAR)
        snprintf(out, size, "%04d", tm.tm_year + 1900);
    else if (p == PANO_PERIOD_MONTH)
        snprintf(out, size, "%04d.%02d", tm.tm_year + 1900, tm.tm_mon + 1);
    else
        snprintf(out, size, "%04d.%02d.%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
}

/* The start of the period holding ts, moved by `ahead` periods. */
static double period_at(pano_period p, double ts, int ahead)
{
    struct tm tm = utc(ts);
    tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
    if (p == PANO_PERIOD_DAY)
        tm.tm_mday += ahead;
    else {
        tm.tm_mday = 1;
        if (p == PANO_PERIOD_MONTH)
            tm.tm_mon += ahead;
        else {
            tm.tm_mon = 0;
            tm.tm_year += ahead;
        }
    }
    return (double)timegm(&tm); /* normalizes the day, month and year */
}

double pano_period_start(pano_period p, double ts) { return period_at(p, ts, 0); }
double pano_period_next(pano_period p, double ts) { return period_at(p, ts, 1); }

bool pano_period_parse(pano_period p, const char *suffix, double *start, double *end)
{
    int y = 0, m = 1, d = 1, used = -1;
    if (p == PANO_PERIOD_YEAR)
        sscanf(suffix, "%4d%n", &y, &used);
    else if (p == PANO_PERIOD_MONTH)
        sscanf(suffix, "%4d.%2d%n", &y, &m, &used);
    else
        sscanf(suffix, "%4d.%2d.%2d%n", &y, &m, &d, &used);
    if (used < 0 || suffix[used] || y < 1970 || m < 1 || m > 12 || d < 1 || d > 31)
        return false;
    struct tm tm = {.tm_year = y - 1900, .tm_mon = m - 1, .tm_mday = d};
    double s = (double)timegm(&tm);
    char check[16];
    pano_period_suffix(p, s, check, sizeof check);
    if (strcmp(check, suffix) != 0) /* 2026.02.31, or digits in another form */
        return false;
    *start = s;
    *end = pano_period_next(p, s);
    return true;
}

bool pano_period_expired(const pano_stream_policy *policy, double ts, double now)
{
    return policy->retention > 0 && pano_period_next(policy->period, ts) + policy->retention < now;
}

/* Epoch seconds that make a sensible @timestamp: 1970 to 9999. */
#define MAX_TS 253402300799.0

pano_place_status pano_event_place(const pano_json *ev, const pano_stream_policy *policies,
                                   double now, pano_place *out, char *reason,
                                   size_t reason_len)
{
    memset(out, 0, sizeof *out);
    out->stream = PANO_STREAM_UNASSIGNED;
    bool object = ev->type == PANO_JSON_OBJECT;
    const char *name = object ? pano_json_get_str(ev, "event") : NULL;
    const char *id = object ? pano_json_get_str(ev, "event_id") : NULL;
    if (!name || !pano_event_name_valid(name)) {
        snprintf(reason, reason_len, "no valid event name");
        return PANO_PLACE_INVALID;
    }
    if (!id || !*id || strlen(id) >= PANO_EVENT_ID_MAX ||
        strlen(id) != pano_json_get(ev, "event_id")->u.string.len) {
        snprintf(reason, reason_len, "no usable event_id");
        return PANO_PLACE_INVALID;
    }
    out->event = name;
    out->event_id = id;
    if (!pano_json_get_number(ev, "ts", &out->ts) || !(out->ts >= 0 && out->ts <= MAX_TS)) {
        snprintf(reason, reason_len, "no usable ts (epoch seconds)");
        return PANO_PLACE_INVALID;
    }
    if (pano_wf_uuid_normalize(pano_json_get_str(ev, "wf_uuid"), out->wf_uuid))
        out->stream = pano_stream_index(pano_event_stream(name));
    else
        out->wf_uuid[0] = '\0';
    const pano_stream_policy *policy = &policies[out->stream];
    if (pano_period_expired(policy, out->ts, now)) {
        snprintf(reason, reason_len,
                 "older than the retention of stream %s (%.0f days after its period): its "
                 "partition is deleted",
                 pano_streams[out->stream], policy->retention / 86400);
        return PANO_PLACE_EXPIRED;
    }
    return PANO_PLACE_OK;
}
