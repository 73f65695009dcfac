#include "metric.h"

#include "buf.h"
#include "mem.h"
#include "sink.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

struct pano_metrics {
    pano_config *own_cfg; /* when we loaded it */
    pano_source *src;
    pano_sink *sink;
    int level;
    int sock; /* to pano-monitor's metrics socket, -1: none */
    struct sockaddr_un addr;
    uint64_t dropped;
};

/* The metrics socket of the pano-monitor running this task, if any (not
 * when an output file was asked for). */
static void open_socket(pano_metrics *m, const pano_config *cfg)
{
    const char *path = getenv(PANO_METRICS_SOCKET_ENV);
    const char *output = pano_config_str(cfg, "pano.output");
    m->sock = -1;
    if (!path || !*path || strlen(path) >= sizeof m->addr.sun_path || (output && *output))
        return;
    m->addr.sun_family = AF_UNIX;
    memcpy(m->addr.sun_path, path, strlen(path) + 1);
    m->sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

pano_metrics *pano_metrics_open(const pano_config *cfg, char *err, size_t errlen)
{
    pano_metrics *m = pano_calloc(1, sizeof *m);
    if (!cfg) {
        m->own_cfg = pano_config_new();
        if (pano_config_load(m->own_cfg, NULL, err, errlen) < 0)
            goto fail;
        cfg = m->own_cfg;
    }
    m->level = (int)pano_config_int(cfg, "pano.monitor.level");
    open_socket(m, cfg);
    m->sink = pano_sink_open(cfg, err, errlen);
    if (!m->sink)
        goto fail;
    m->src = pano_source_new(cfg);
    return m;
fail:
    pano_metrics_close(m);
    return NULL;
}

void pano_metrics_close(pano_metrics *m)
{
    if (!m)
        return;
    pano_sink_close(m->sink);
    pano_source_free(m->src);
    pano_config_free(m->own_cfg);
    if (m->sock >= 0)
        close(m->sock);
    free(m);
}

uint64_t pano_metrics_dropped(const pano_metrics *m) { return m->dropped; }

/* Whether s holds none of the characters that end a DogStatsD field. */
static bool statsd_safe(const char *s, const char *stops)
{
    return strpbrk(s, stops) == NULL;
}

/* The metric as one DogStatsD line, when it can be one (its name and tag
 * values hold no separator): 1 sent or dropped, 0 not a line, -1 failed. */
static int send_line(pano_metrics *m, const char *name, double value, int level,
                     const char *const *tags, char *err, size_t errlen)
{
    if (!statsd_safe(name, ":|\r\n"))
        return 0;
    for (const char *const *t = tags; t && *t; t++)
        if (!statsd_safe(*t, ",|\r\n"))
            return 0;
    pano_buf line = {0};
    pano_buf_appendf(&line, "%s:%.17g|g|#level:%d", name, value, level);
    for (const char *const *t = tags; t && *t; t++) {
        const char *eq = strchr(*t, '=');
        pano_buf_appendf(&line, ",%.*s:%s", (int)(eq - *t), *t, eq + 1);
    }
    ssize_t n = sendto(m->sock, line.data, line.len, MSG_DONTWAIT, (struct sockaddr *)&m->addr,
                       sizeof m->addr);
    int rc = 1;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        m->dropped++;
        snprintf(err, errlen, "metric %s dropped: the metrics socket is full", name);
        rc = -1;
    } else if (n < 0) {
        snprintf(err, errlen, "metric %s: the metrics socket %s: %s", name, m->addr.sun_path,
                 strerror(errno));
        rc = -1;
    }
    pano_buf_free(&line);
    return rc;
}

bool pano_metrics_enabled(const pano_metrics *m, int level) { return level <= m->level; }

static bool tag_key_valid(const char *k, size_t len)
{
    if (len == 0 || len > 128)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = k[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return false;
    }
    return true;
}

/* Whether a metric's name, value, level and tags are valid; false with
 * the reason in err. */
static bool metric_valid(const char *name, double value, int level, const char *const *tags,
                         char *err, size_t errlen)
{
    size_t nlen = name ? strlen(name) : 0;
    if (nlen == 0 || nlen > PANO_METRIC_NAME_MAX) {
        snprintf(err, errlen, "a metric name has 1 to %d bytes", PANO_METRIC_NAME_MAX);
        return false;
    }
    for (const char *p = name; *p; p++)
        if ((unsigned char)*p < 0x20) {
            snprintf(err, errlen, "metric name holds a control character");
            return false;
        }
    if (!isfinite(value)) {
        snprintf(err, errlen, "metric %s: the value is not a finite number", name);
        return false;
    }
    if (level < 1 || level > 9) {
        snprintf(err, errlen, "metric %s: level %d is not between 1 and 9", name, level);
        return false;
    }
    for (const char *const *t = tags; t && *t; t++) {
        const char *eq = strchr(*t, '=');
        if (!eq || !tag_key_valid(*t, (size_t)(eq - *t))) {
            snprintf(err, errlen,
                     "metric %s: tag '%s' is not KEY=VALUE with a key of letters, digits, "
                     "'_', '-' and '.'",
                     name, *t);
            return false;
        }
    }
    return true;
}

pano_json *pano_metric_event(pano_source *src, const char *name, double value, int level,
                             const char *const *tags, char *err, size_t errlen)
{
    if (!metric_valid(name, value, level, tags, err, errlen))
        return NULL;
    pano_json *tagobj = pano_json_object();
    for (const char *const *t = tags; t && *t; t++) {
        const char *eq = strchr(*t, '=');
        char *key = pano_strndup(*t, (size_t)(eq - *t));
        pano_json_set_str(tagobj, key, eq + 1);
        free(key);
    }
    pano_json *ev = pano_event_new(src, PANO_METRIC_EVENT);
    pano_json_set_str(ev, "name", name);
    pano_json_set_double(ev, "value", value, -1);
    pano_json_set_int(ev, "level", level);
    pano_json_set(ev, "tags", tagobj);
    pano_json_set_int(ev, "pid", getpid());
    return ev;
}

int pano_metric(pano_metrics *m, const char *name, double value, int level,
                const char *const *tags, char *err, size_t errlen)
{
    if (!pano_metrics_enabled(m, level))
        return 1;
    if (!metric_valid(name, value, level, tags, err, errlen))
        return -1;
    if (m->sock >= 0) { /* the event is the monitor's to make */
        int sent = send_line(m, name, value, level, tags, err, errlen);
        if (sent != 0)
            return sent < 0 ? -1 : 0;
    }
    pano_json *ev = pano_metric_event(m->src, name, value, level, tags, err, errlen);
    if (!ev)
        return -1;
    int rc = pano_sink_send(m->sink, ev, err, errlen);
    pano_json_free(ev);
    return rc < 0 ? -1 : 0;
}

int pano_metrics_flush_spool(pano_metrics *m, double lock_wait, char *err, size_t errlen)
{
    return pano_sink_flush_spool(m->sink, lock_wait, err, errlen);
}
