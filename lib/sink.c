#include "sink.h"

#include "amqp_client.h"
#include "log.h"
#include "filter.h"
#include "mem.h"
#include "url.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pano_sink {
    char description[512];
    pano_filter *filter; /* pano.events, pano.<publisher>.enabled */
    /* AMQP */
    pano_amqp_url url;
    pano_amqp_options options;
    char *password; /* from pano.amqp.password_file */
    pano_amqp *amqp;
    bool has_url;
    /* JSON lines */
    FILE *out;
    bool close_out;
};

/* First line of a password file, without its line ending. */
static char *read_password_file(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "pano.amqp.password_file: cannot open %s: %s", path,
                 strerror(errno));
        return NULL;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, f);
    fclose(f);
    if (n < 0) {
        free(line);
        snprintf(err, errlen, "pano.amqp.password_file: %s is empty", path);
        return NULL;
    }
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    return line;
}

pano_sink *pano_sink_open(const pano_config *cfg, const char *default_output, char *err,
                          size_t errlen)
{
    pano_sink *s = pano_calloc(1, sizeof *s);
    if (!(s->filter = pano_filter_new(cfg, pano_log_program(), err, errlen)))
        goto fail;
    const char *url = pano_config_str(cfg, "pano.amqp.url");
    if (url && *url) {
        if (pano_amqp_url_parse(url, &s->url, err, errlen) < 0)
            goto fail;
        s->has_url = true;
        const char *pwfile = pano_config_str(cfg, "pano.amqp.password_file");
        if (pwfile && !(s->password = read_password_file(pwfile, err, errlen)))
            goto fail;
        s->options.url = &s->url;
        s->options.password = s->password;
        s->options.heartbeat = (int)pano_config_int(cfg, "pano.amqp.heartbeat");
        if (s->url.heartbeat >= 0)
            s->options.heartbeat = s->url.heartbeat;
        s->options.timeout = pano_config_double(cfg, "pano.amqp.timeout");
        if (s->url.connection_timeout > 0)
            s->options.timeout = s->url.connection_timeout;
        s->options.tls_verify = pano_config_bool(cfg, "pano.amqp.tls_verify");
        s->options.cacert = pano_config_str(cfg, "pano.amqp.cacert");
        s->options.publisher = true;
        s->options.max_in_flight = 256;
        pano_url_redact(url, s->description, sizeof s->description);
        return s;
    }
    const char *path = pano_config_str(cfg, "pano.output");
    if (!path || !*path)
        path = default_output;
    if (strcmp(path, "-") == 0)
        s->out = stdout;
    else if (strcmp(path, "/dev/stderr") == 0)
        s->out = stderr;
    else {
        s->out = fopen(path, "a");
        if (!s->out) {
            snprintf(err, errlen, "cannot open output file %s: %s", path, strerror(errno));
            goto fail;
        }
        s->close_out = true;
    }
    snprintf(s->description, sizeof s->description, "%s",
             strcmp(path, "-") == 0 ? "standard output" : path);
    return s;

fail:
    pano_sink_close(s);
    return NULL;
}

const char *pano_sink_describe(const pano_sink *s) { return s->description; }

static int write_line(pano_sink *s, const char *json, size_t len, char *err, size_t errlen)
{
    if (fwrite(json, 1, len, s->out) != len || fputc('\n', s->out) == EOF ||
        fflush(s->out) != 0) {
        snprintf(err, errlen, "writing to %s: %s", s->description, strerror(errno));
        return -1;
    }
    return 0;
}

static int publish(pano_sink *s, const char *key, const char *id, const char *json,
                   size_t len, char *err, size_t errlen)
{
    /* Two attempts: a connection that went stale (broker restart, idle
     * timeout) is reopened once before the send is reported as failed. */
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!s->amqp) {
            s->amqp = pano_amqp_connect(&s->options, err, errlen);
            if (!s->amqp)
                continue;
        }
        int rc = pano_amqp_publish(s->amqp, key, json, len, id, err, errlen);
        if (rc >= 0)
            return rc == 0 ? 0 : -1; /* nacked or unroutable: reconnecting won't help */
        pano_amqp_close(s->amqp);
        s->amqp = NULL;
    }
    return -1;
}

int pano_sink_send_raw(pano_sink *s, const char *routing_key, const char *event_id,
                       const char *json, size_t len, char *err, size_t errlen)
{
    if (!pano_filter_pass(s->filter, routing_key)) { /* not an error, not spooled */
        pano_debug("event %s not sent (pano.events, pano.<publisher>.enabled)", routing_key);
        return 0;
    }
    if (s->has_url)
        return publish(s, routing_key, event_id, json, len, err, errlen);
    return write_line(s, json, len, err, errlen);
}

int pano_sink_send(pano_sink *s, const pano_json *event, char *err, size_t errlen)
{
    const char *name = pano_json_get_str(event, "event");
    if (!name) {
        snprintf(err, errlen, "event has no name");
        return -1;
    }
    size_t len;
    char *json = pano_json_serialize(event, &len);
    if (!json) {
        snprintf(err, errlen, "cannot serialize event %s", name);
        return -1;
    }
    int rc = pano_sink_send_raw(s, name, pano_json_get_str(event, "event_id"), json, len,
                                err, errlen);
    free(json);
    return rc;
}

void pano_sink_close(pano_sink *s)
{
    if (!s)
        return;
    pano_filter_free(s->filter);
    pano_amqp_close(s->amqp);
    if (s->has_url)
        pano_amqp_url_free(&s->url);
    if (s->password) {
        memset(s->password, 0, strlen(s->password));
        free(s->password);
    }
    if (s->close_out && s->out)
        fclose(s->out);
    free(s);
}
