/*
 * amqp_load - publish synthetic pano events to RabbitMQ, fast and without
 * losing any: pipelined publisher confirms (lib/amqp_client.h), and after a
 * lost connection every unconfirmed message is published again.
 *
 * Events look like kickstart.inv.online samples (about 550 bytes, named
 * kickstart.load.sample by default: no schema claims that name), with
 * event_id "<prefix>-<index>", seq = index + 1 and one of W workflow UUIDs,
 * so a test can check what arrived by event_id. --malformed K mixes K
 * messages the bridge must dead-letter, spread evenly through the run; their
 * routing key is "malformed.<kind>.<index>" so a test can match each one to
 * its dead-letter record.
 *
 * Output: one line on stdout,
 *   published N confirmed N nacked N unroutable N resent N seconds S rate R
 * Exit 0 when every message was confirmed, 1 otherwise, 2 on usage errors.
 */
#include "amqp_client.h"
#include "event.h"
#include "log.h"
#include "mem.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
    BAD_JSON,
    BAD_UTF8,
    BAD_NO_WF_UUID,
    BAD_TYPES,
    BAD_DEEP,
    BAD_NOT_OBJECT,
    BAD_EVENT_NAME,
    BAD_HUGE, /* only --huge of them */
    BAD_KINDS
};
static const char *const bad_names[BAD_KINDS] = {
    "bad_json", "bad_utf8", "no_wf_uuid", "wrong_types",
    "deep",     "not_object", "bad_event_name", "huge",
};

typedef struct {
    uint64_t count, start, workflows, workflow_base, malformed, huge, pad;
    size_t in_flight;
    double rate, timeout;
    bool newline, events_owned;
    const char *prefix;
    const char **events;
    size_t n_events;
    const char *url;
} options;

typedef struct {
    options o;
    uint64_t total;       /* messages to send: count + malformed */
    unsigned char *state; /* per message: 0 to send, 1 sent, 2 confirmed, 3 failed */
    uint64_t *ring;       /* seq % in_flight -> message index */
    uint64_t confirmed, nacked, unroutable, resent;
    uint64_t last_seq;    /* of the current connection */
    uint64_t *resend;     /* indices to send again after a reconnect */
    size_t n_resend;
    char *huge_body;
    size_t huge_len;
} load;

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: amqp_load [options]\n"
            "  -u, --url URL         broker URL (default $PANO_AMQP_URL)\n"
            "  -n, --count N         valid events to publish (default 1000)\n"
            "  -s, --start I         index of the first event (default 0)\n"
            "  -w, --workflows W     distinct wf_uuid values (default 10)\n"
            "  -b, --workflow-base B the first of them is workflow B (default 0), so\n"
            "                        that another run can use other workflows\n"
            "  -e, --events LIST     comma-separated event names, cycled\n"
            "                        (default kickstart.load.sample)\n"
            "  -p, --prefix P        event_id prefix (default: random)\n"
            "  -m, --malformed K     also publish K malformed messages\n"
            "      --huge H          of which H are 10 MB bodies (default 1 if K > 0)\n"
            "  -i, --in-flight N     unconfirmed messages (default 1000)\n"
            "  -r, --rate R          at most R messages/s (default unlimited)\n"
            "  -t, --timeout S       give up after S seconds (default 600)\n"
            "  -l, --newline         end every body with a newline\n"
            "  -P, --pad BYTES       add a \"pad\" field of BYTES random characters to valid events\n");
}

/* A deterministic UUID-looking string for workflow w. */
static void workflow_uuid(uint64_t w, char out[37])
{
    snprintf(out, 37, "%08" PRIx32 "-0000-4000-8000-%012" PRIx64, (uint32_t)w,
             (w * 2654435761u) & 0xFFFFFFFFFFFFu);
}

static size_t valid_event(const load *l, uint64_t i, char *buf, size_t size, const char **key)
{
    char wf[37];
    workflow_uuid(l->o.workflow_base + i % l->o.workflows, wf);
    const char *name = l->o.events[i % l->o.n_events];
    *key = name;
    int n = snprintf(
        buf, size,
        "{\"event\":\"%s\",\"ts\":%.6f,\"event_id\":\"%s-%" PRIu64 "\",\"seq\":%" PRIu64
        ",\"hostname\":\"worker-%" PRIu64 ".example.org\",\"wf_uuid\":\"%s\","
        "\"wf_label\":\"load\",\"dag_job_id\":\"preprocess_ID%07" PRIu64 "\","
        "\"condor_job_id\":\"%" PRIu64 ".0\",\"xformation\":\"pegasus::preprocess:4.0\","
        "\"task_id\":\"ID%07" PRIu64 "\",\"site\":\"condorpool\",\"pid\":%" PRIu64 ","
        "\"utime\":12.34,\"stime\":1.23,\"iowait\":0.0,\"vm\":215044,\"rss\":40960,"
        "\"procs\":2,\"threads\":3,\"rchar\":52428800,\"wchar\":1048576,\"syscr\":1200,"
        "\"syscw\":80",
        name, 1700000000.0 + (double)i / 1000.0, l->o.prefix, i, i + 1, i % 64, wf,
        i % 1000, 1000 + i, i % 1000, 4000 + i % 30000);
    if (n < 0 || (size_t)n + l->o.pad + 16 > size)
        return 0;
    if (l->o.pad) {
        n += snprintf(buf + n, size - (size_t)n, ",\"pad\":\"");
        /* Random letters and digits: a compressing producer cannot shrink
         * the event below its size (bridge_refused counts on that). */
        static const char alphabet[] =
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        uint64_t x = 0x9e3779b97f4a7c15ULL * (i + 1);
        for (uint64_t k = 0; k < l->o.pad; k++) {
            x ^= x << 13; /* xorshift64 */
            x ^= x >> 7;
            x ^= x << 17;
            buf[n++] = alphabet[x & 63];
        }
        buf[n++] = '"';
    }
    n += snprintf(buf + n, size - (size_t)n, "}%s", l->o.newline ? "\n" : "");
    return (size_t)n;
}

static size_t malformed(load *l, uint64_t j, int kind, char *buf, size_t size,
                        const char **body)
{
    char wf[37];
    workflow_uuid(j % l->o.workflows, wf);
    *body = buf;
    int n = 0;
    switch (kind) {
    case BAD_JSON:
        n = snprintf(buf, size, "{\"event\":\"malformed.bad_json\",\"ts\":1.5,\"wf_uuid\":\"%s\",",
                     wf);
        break;
    case BAD_UTF8:
        n = snprintf(buf, size,
                     "{\"event\":\"malformed.bad_utf8\",\"ts\":1.5,\"wf_uuid\":\"%s\","
                     "\"note\":\"caf\xC3\x28 \xFF\xFE\"}",
                     wf);
        break;
    case BAD_NO_WF_UUID:
        n = snprintf(buf, size, "{\"event\":\"malformed.no_wf_uuid\",\"ts\":1.5,\"seq\":%" PRIu64 "}",
                     j + 1);
        break;
    case BAD_TYPES:
        n = snprintf(buf, size,
                     "{\"event\":\"malformed.wrong_types\",\"ts\":1.5,\"wf_uuid\":\"%s\","
                     "\"seq\":\"seven\"}",
                     wf);
        break;
    case BAD_DEEP: {
        size_t depth = 10000;
        if (size < 2 * depth + 1)
            return 0;
        memset(buf, '[', depth);
        memset(buf + depth, ']', depth);
        n = (int)(2 * depth);
        break;
    }
    case BAD_NOT_OBJECT:
        n = snprintf(buf, size, "[\"malformed.not_object\",%" PRIu64 "]", j);
        break;
    case BAD_EVENT_NAME:
        n = snprintf(buf, size,
                     "{\"event\":\"malformed..bad name\",\"ts\":1.5,\"wf_uuid\":\"%s\"}", wf);
        break;
    case BAD_HUGE:
        *body = l->huge_body;
        return l->huge_len;
    }
    return (size_t)n;
}

/* The kind of malformed message number j, among K of which H are huge. */
static int kind_of(const load *l, uint64_t j)
{
    /* The huge ones are spread evenly too: every K/H-th. */
    if (l->o.huge && j % (l->o.malformed / l->o.huge) == 0 &&
        j / (l->o.malformed / l->o.huge) < l->o.huge)
        return BAD_HUGE;
    return (int)(j % BAD_HUGE);
}

static void on_confirm(void *user, uint64_t seq, pano_amqp_outcome outcome)
{
    load *l = user;
    uint64_t index = l->ring[seq % l->o.in_flight];
    if (l->state[index] != 1)
        return;
    switch (outcome) {
    case PANO_AMQP_CONFIRMED:
        l->state[index] = 2;
        l->confirmed++;
        break;
    case PANO_AMQP_NACKED: /* the broker could not take it: send it again */
        l->nacked++;
        l->state[index] = 0;
        l->resend[l->n_resend++] = index;
        break;
    case PANO_AMQP_UNROUTABLE:
        l->unroutable++;
        l->state[index] = 3;
        break;
    }
}

/* After a lost connection: everything sent and not settled goes again. */
static void collect_unsettled(load *l, uint64_t sent_upto)
{
    for (uint64_t i = 0; i < sent_upto; i++)
        if (l->state[i] == 1) {
            l->state[i] = 0;
            l->resend[l->n_resend++] = i;
            l->resent++;
        }
}

static int send_one(load *l, pano_amqp *a, uint64_t index, char *buf, size_t size, char *err,
                    size_t errlen)
{
    const char *key, *body = buf;
    char rk[128], id[128];
    size_t len;
    if (index < l->o.count) {
        len = valid_event(l, l->o.start + index, buf, size, &key);
        snprintf(id, sizeof id, "%s-%" PRIu64, l->o.prefix, l->o.start + index);
    } else {
        uint64_t j = index - l->o.count;
        int kind = kind_of(l, j);
        len = malformed(l, j, kind, buf, size, &body);
        snprintf(rk, sizeof rk, "malformed.%s.%" PRIu64, bad_names[kind], j);
        key = rk;
        snprintf(id, sizeof id, "%s-bad-%" PRIu64, l->o.prefix, j);
    }
    uint64_t seq;
    if (pano_amqp_send(a, key, body, len, id, &seq, on_confirm, l, err, errlen) < 0)
        return -1;
    l->ring[seq % l->o.in_flight] = index;
    l->state[index] = 1;
    l->last_seq = seq;
    return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*s == '\0' || *end != '\0' || *s == '-')
        return -1;
    *out = v;
    return 0;
}

static int parse_options(int argc, char **argv, options *o)
{
    static const struct option longopts[] = {
        {"url", required_argument, NULL, 'u'},      {"count", required_argument, NULL, 'n'},
        {"start", required_argument, NULL, 's'},    {"workflows", required_argument, NULL, 'w'},
        {"workflow-base", required_argument, NULL, 'b'},
        {"events", required_argument, NULL, 'e'},   {"prefix", required_argument, NULL, 'p'},
        {"malformed", required_argument, NULL, 'm'}, {"huge", required_argument, NULL, 'H'},
        {"in-flight", required_argument, NULL, 'i'}, {"rate", required_argument, NULL, 'r'},
        {"timeout", required_argument, NULL, 't'},  {"newline", no_argument, NULL, 'l'},
        {"pad", required_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    *o = (options){.count = 1000, .workflows = 10, .in_flight = 1000, .timeout = 600,
                   .huge = UINT64_MAX, .url = getenv("PANO_AMQP_URL")};
    static const char *default_events[] = {"kickstart.load.sample"};
    o->events = default_events;
    o->n_events = 1;
    char *events = NULL;
    int opt;
    uint64_t v;
    while ((opt = getopt_long(argc, argv, "u:n:s:w:b:e:p:m:i:r:t:lP:h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'u':
            o->url = optarg;
            break;
        case 'n':
        case 's':
        case 'w':
        case 'b':
        case 'm':
        case 'H':
        case 'P':
        case 'i':
            if (parse_u64(optarg, &v) < 0) {
                fprintf(stderr, "amqp_load: not a count: %s\n", optarg);
                return -1;
            }
            if (opt == 'n')
                o->count = v;
            else if (opt == 's')
                o->start = v;
            else if (opt == 'w')
                o->workflows = v ? v : 1;
            else if (opt == 'b')
                o->workflow_base = v;
            else if (opt == 'm')
                o->malformed = v;
            else if (opt == 'H')
                o->huge = v;
            else if (opt == 'P')
                o->pad = v < 60000 ? v : 60000;
            else
                o->in_flight = v ? (size_t)v : 1;
            break;
        case 'e':
            events = optarg;
            break;
        case 'p':
            o->prefix = optarg;
            break;
        case 'r':
            o->rate = atof(optarg);
            break;
        case 't':
            o->timeout = atof(optarg);
            break;
        case 'l':
            o->newline = true;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return -1;
        }
    }
    if (optind < argc || !o->url) {
        fprintf(stderr, "amqp_load: %s\n", o->url ? "unexpected argument" : "no --url and no PANO_AMQP_URL");
        return -1;
    }
    if (events) {
        size_t n = 1;
        for (const char *p = events; *p; p++)
            n += *p == ',';
        const char **list = pano_calloc(n, sizeof *list);
        n = 0;
        for (char *save, *t = strtok_r(events, ",", &save); t; t = strtok_r(NULL, ",", &save))
            list[n++] = t;
        if (n == 0) {
            fprintf(stderr, "amqp_load: empty --events\n");
            free(list);
            return -1;
        }
        o->events = list;
        o->n_events = n;
        o->events_owned = true;
    }
    if (o->huge == UINT64_MAX)
        o->huge = o->malformed ? 1 : 0;
    if (o->huge > o->malformed)
        o->huge = o->malformed;
    return 0;
}

int main(int argc, char **argv)
{
    pano_log_init("amqp_load");
    load l = {0};
    if (parse_options(argc, argv, &l.o) < 0)
        return 2;
    char prefix[32];
    if (!l.o.prefix) {
        snprintf(prefix, sizeof prefix, "load%08lx", (unsigned long)(time(NULL) ^ getpid()));
        l.o.prefix = prefix;
    }
    pano_amqp_url url;
    char err[512];
    if (pano_amqp_url_parse(l.o.url, &url, err, sizeof err) < 0) {
        fprintf(stderr, "amqp_load: %s\n", err);
        return 2;
    }
    l.total = l.o.count + l.o.malformed;
    l.state = pano_calloc(l.total ? l.total : 1, 1);
    l.resend = pano_calloc(l.total ? l.total : 1, sizeof *l.resend);
    l.ring = pano_calloc(l.o.in_flight, sizeof *l.ring);
    if (l.o.huge) {
        /* A valid event padded to 10 MB: only its size is wrong. */
        l.huge_len = 10 * 1024 * 1024;
        l.huge_body = pano_malloc(l.huge_len);
        int n = snprintf(l.huge_body, 200,
                         "{\"event\":\"malformed.huge\",\"ts\":1.5,\"wf_uuid\":\"w\",\"pad\":\"");
        memset(l.huge_body + n, 'x', l.huge_len - (size_t)n - 2);
        memcpy(l.huge_body + l.huge_len - 2, "\"}", 2);
    }
    pano_amqp_options ao = {.url = &url, .heartbeat = 30, .timeout = 30, .publisher = true,
                            .max_in_flight = l.o.in_flight};
    enum { BUF = 64 * 1024 };
    char *buf = pano_malloc(BUF);
    double t0 = pano_now(), deadline = t0 + l.o.timeout;
    uint64_t next = 0; /* next index never sent */
    pano_amqp *a = NULL;
    int rc = 0;
    double backoff = 0.2;
    while (next < l.total || l.n_resend > 0 || (a && pano_amqp_in_flight(a) > 0)) {
        if (pano_now() > deadline) {
            fprintf(stderr, "amqp_load: timed out after %.0f s\n", l.o.timeout);
            rc = 1;
            break;
        }
        if (!a) {
            a = pano_amqp_connect(&ao, err, sizeof err);
            if (!a) {
                fprintf(stderr, "amqp_load: %s (retrying)\n", err);
                usleep((useconds_t)(backoff * 1e6));
                backoff = backoff * 2 > 5 ? 5 : backoff * 2;
                continue;
            }
            backoff = 0.2;
        }
        int failed = 0;
        while (!failed && l.n_resend > 0) {
            uint64_t index = l.resend[--l.n_resend];
            failed = send_one(&l, a, index, buf, BUF, err, sizeof err) < 0;
            if (failed)
                l.resend[l.n_resend++] = index;
        }
        /* Up to one window per round, then collect confirms. */
        for (size_t k = 0; !failed && k < l.o.in_flight && next < l.total; k++) {
            if (l.o.rate > 0) {
                double due = t0 + (double)next / l.o.rate;
                double now = pano_now();
                if (due > now)
                    usleep((useconds_t)((due - now) * 1e6));
            }
            failed = send_one(&l, a, next, buf, BUF, err, sizeof err) < 0;
            if (!failed)
                next++;
        }
        if (!failed && next >= l.total && l.n_resend == 0 && pano_amqp_in_flight(a) > 0)
            failed = pano_amqp_wait(a, l.last_seq, on_confirm, &l, err, sizeof err) < 0;
        if (failed) {
            fprintf(stderr, "amqp_load: %s (reconnecting)\n", err);
            pano_amqp_close(a);
            a = NULL;
            collect_unsettled(&l, next);
        }
    }
    double secs = pano_now() - t0;
    pano_amqp_close(a);
    printf("published %" PRIu64 " confirmed %" PRIu64 " nacked %" PRIu64 " unroutable %" PRIu64
           " resent %" PRIu64 " seconds %.3f rate %.0f\n",
           l.total, l.confirmed, l.nacked, l.unroutable, l.resent, secs,
           secs > 0 ? (double)l.confirmed / secs : 0.0);
    if (l.confirmed != l.total)
        rc = 1;
    free(buf);
    free(l.huge_body);
    free(l.state);
    free(l.resend);
    free(l.ring);
    if (l.o.events_owned)
        free((void *)l.o.events);
    pano_amqp_url_free(&url);
    return rc;
}
