#include "amqp_client.h"

#include "log.h"
#include "mem.h"

#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define CHANNEL 1
#define SYSTEM_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

/* One unconfirmed message. The message id is kept so that a basic.return,
 * which carries no delivery tag, can be matched to its sequence number. */
typedef struct {
    uint64_t seq;
    char *message_id;
    bool returned;
} pending;

struct pano_amqp {
    amqp_connection_state_t conn;
    pano_amqp_url url; /* private copy */
    double timeout;
    bool publisher;
    bool broken;
    uint64_t next_seq;   /* publisher: sequence number of the next message */
    uint64_t settled;    /* every seq <= settled is confirmed */
    pending *window;     /* ring of max_in_flight entries, indexed by seq */
    size_t window_size;
};

static struct timeval seconds_to_tv(double s)
{
    struct timeval tv;
    tv.tv_sec = (time_t)s;
    tv.tv_usec = (suseconds_t)((s - (double)tv.tv_sec) * 1e6);
    return tv;
}

void pano_amqp_reply_text(amqp_rpc_reply_t r, char *out, size_t size)
{
    switch (r.reply_type) {
    case AMQP_RESPONSE_NORMAL:
        snprintf(out, size, "ok");
        return;
    case AMQP_RESPONSE_NONE:
        snprintf(out, size, "missing RPC reply");
        return;
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
        snprintf(out, size, "%s", amqp_error_string2(r.library_error));
        return;
    case AMQP_RESPONSE_SERVER_EXCEPTION:
        break;
    }
    if (r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
        amqp_connection_close_t *m = r.reply.decoded;
        snprintf(out, size, "connection closed by broker: %u %.*s", m->reply_code,
                 (int)m->reply_text.len, (const char *)m->reply_text.bytes);
    } else if (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        amqp_channel_close_t *m = r.reply.decoded;
        snprintf(out, size, "channel closed by broker: %u %.*s", m->reply_code,
                 (int)m->reply_text.len, (const char *)m->reply_text.bytes);
    } else
        snprintf(out, size, "unexpected broker method 0x%08X", r.reply.id);
}

/* Check the last RPC reply; on failure describe it as "<what>: <reason>". */
static int check_reply(pano_amqp *a, const char *what, char *err, size_t errlen)
{
    amqp_rpc_reply_t r = amqp_get_rpc_reply(a->conn);
    if (r.reply_type == AMQP_RESPONSE_NORMAL)
        return 0;
    char why[256];
    pano_amqp_reply_text(r, why, sizeof why);
    snprintf(err, errlen, "%s: %s", what, why);
    a->broken = true;
    return -1;
}

static void free_window(pano_amqp *a)
{
    for (size_t i = 0; i < a->window_size; i++)
        free(a->window[i].message_id);
    free(a->window);
}

static void copy_url(pano_amqp_url *dst, const pano_amqp_url *src, const char *password)
{
    *dst = *src;
    dst->host = pano_strdup(src->host);
    dst->user = pano_strdup(src->user);
    dst->password = pano_strdup(password ? password : src->password);
    dst->vhost = pano_strdup(src->vhost);
    dst->exchange = pano_strdup(src->exchange);
}

pano_amqp *pano_amqp_connect(const pano_amqp_options *o, char *err, size_t errlen)
{
    pano_amqp *a = pano_calloc(1, sizeof *a);
    copy_url(&a->url, o->url, o->password);
    a->timeout = o->timeout > 0 ? o->timeout : 10;
    a->publisher = o->publisher;
    a->next_seq = 1;
    a->window_size = o->max_in_flight ? o->max_in_flight : 256;
    a->window = pano_calloc(a->window_size, sizeof(pending));

    a->conn = amqp_new_connection();
    if (!a->conn) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    amqp_socket_t *sock;
    if (a->url.tls) {
        sock = amqp_ssl_socket_new(a->conn);
        if (!sock) {
            snprintf(err, errlen, "cannot create a TLS socket");
            goto fail;
        }
        amqp_ssl_socket_set_verify_peer(sock, o->tls_verify);
        amqp_ssl_socket_set_verify_hostname(sock, o->tls_verify);
        const char *ca = o->cacert;
        if (!ca && o->tls_verify && access(SYSTEM_CA_BUNDLE, R_OK) == 0)
            ca = SYSTEM_CA_BUNDLE;
        if (ca && amqp_ssl_socket_set_cacert(sock, ca) != AMQP_STATUS_OK) {
            snprintf(err, errlen, "cannot load CA bundle %s", ca);
            goto fail;
        }
    } else {
        sock = amqp_tcp_socket_new(a->conn);
        if (!sock) {
            snprintf(err, errlen, "cannot create a socket");
            goto fail;
        }
    }
    struct timeval tv = seconds_to_tv(a->timeout);
    int status = amqp_socket_open_noblock(sock, a->url.host, a->url.port, &tv);
    if (status != AMQP_STATUS_OK) {
        snprintf(err, errlen, "cannot connect to %s:%d: %s", a->url.host, a->url.port,
                 amqp_error_string2(status));
        goto fail;
    }
    amqp_set_handshake_timeout(a->conn, &tv);
    amqp_set_rpc_timeout(a->conn, &tv);

    /* rabbitmq-c merges these with its own client properties. */
    amqp_table_entry_t capability = {
        amqp_cstring_bytes("consumer_cancel_notify"),
        {.kind = AMQP_FIELD_KIND_BOOLEAN, .value = {.boolean = 1}}};
    amqp_table_entry_t properties[2] = {
        {amqp_cstring_bytes("capabilities"),
         {.kind = AMQP_FIELD_KIND_TABLE, .value = {.table = {1, &capability}}}},
        {amqp_cstring_bytes("connection_name"),
         {.kind = AMQP_FIELD_KIND_UTF8,
          .value = {.bytes = amqp_cstring_bytes(o->connection_name ? o->connection_name : "")}}},
    };
    amqp_table_t client_properties = {o->connection_name ? 2 : 1, properties};
    amqp_rpc_reply_t r = amqp_login_with_properties(
        a->conn, a->url.vhost, 0, 131072, o->heartbeat, &client_properties,
        AMQP_SASL_METHOD_PLAIN, a->url.user, a->url.password);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
        char why[256];
        pano_amqp_reply_text(r, why, sizeof why);
        snprintf(err, errlen, "login to %s:%d vhost '%s' as '%s' failed: %s", a->url.host,
                 a->url.port, a->url.vhost, a->url.user, why);
        goto fail;
    }
    amqp_channel_open(a->conn, CHANNEL);
    if (check_reply(a, "opening a channel", err, errlen) < 0)
        goto fail;
    if (a->publisher) {
        amqp_confirm_select(a->conn, CHANNEL);
        if (check_reply(a, "enabling publisher confirms", err, errlen) < 0)
            goto fail;
        amqp_exchange_declare(a->conn, CHANNEL, amqp_cstring_bytes(a->url.exchange),
                              amqp_cstring_bytes("topic"), 0, 1, 0, 0, amqp_empty_table);
        char what[300];
        snprintf(what, sizeof what, "declaring exchange '%s' (durable topic)",
                 a->url.exchange);
        if (check_reply(a, what, err, errlen) < 0)
            goto fail;
    }
    return a;

fail:
    pano_amqp_close(a);
    return NULL;
}

size_t pano_amqp_in_flight(const pano_amqp *a) { return (size_t)(a->next_seq - 1 - a->settled); }

amqp_connection_state_t pano_amqp_connection(pano_amqp *a) { return a->conn; }

/* Settle every pending message up to tag with the given outcome (returned
 * messages keep theirs). */
static void settle(pano_amqp *a, uint64_t tag, bool multiple, bool nack,
                   pano_amqp_confirm_fn confirm, void *user)
{
    uint64_t first = multiple ? a->settled + 1 : tag;
    for (uint64_t s = first; s <= tag; s++) {
        pending *p = &a->window[s % a->window_size];
        if (p->seq != s)
            continue; /* already settled */
        pano_amqp_outcome outcome = p->returned ? PANO_AMQP_UNROUTABLE
                                    : nack      ? PANO_AMQP_NACKED
                                                : PANO_AMQP_CONFIRMED;
        if (confirm)
            confirm(user, s, outcome);
        free(p->message_id);
        p->message_id = NULL;
        p->seq = 0;
    }
    /* Advance the watermark over every settled sequence number. */
    while (a->settled + 1 < a->next_seq &&
           a->window[(a->settled + 1) % a->window_size].seq != a->settled + 1)
        a->settled++;
}

/* A basic.return precedes the confirm of the returned message; its content
 * (properties and body) follows and must be read off the channel. */
static int handle_return(pano_amqp *a, char *err, size_t errlen)
{
    amqp_message_t msg;
    amqp_rpc_reply_t r = amqp_read_message(a->conn, CHANNEL, &msg, 0);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
        char why[256];
        pano_amqp_reply_text(r, why, sizeof why);
        snprintf(err, errlen, "reading a returned message: %s", why);
        a->broken = true;
        return -1;
    }
    if (msg.properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG) {
        amqp_bytes_t id = msg.properties.message_id;
        for (uint64_t s = a->settled + 1; s < a->next_seq; s++) {
            pending *p = &a->window[s % a->window_size];
            if (p->seq == s && p->message_id && strlen(p->message_id) == id.len &&
                memcmp(p->message_id, id.bytes, id.len) == 0) {
                p->returned = true;
                break;
            }
        }
    }
    amqp_destroy_message(&msg);
    return 0;
}

int pano_amqp_wait(pano_amqp *a, uint64_t seq, pano_amqp_confirm_fn confirm, void *user,
                   char *err, size_t errlen)
{
    if (a->broken) {
        snprintf(err, errlen, "connection is closed");
        return -1;
    }
    while (a->settled < seq) {
        amqp_frame_t frame;
        struct timeval tv = seconds_to_tv(a->timeout);
        int status = amqp_simple_wait_frame_noblock(a->conn, &frame, &tv);
        if (status == AMQP_STATUS_TIMEOUT) {
            snprintf(err, errlen, "no confirm from the broker within %.1f s", a->timeout);
            a->broken = true;
            return -1;
        }
        if (status != AMQP_STATUS_OK) {
            snprintf(err, errlen, "connection lost: %s", amqp_error_string2(status));
            a->broken = true;
            return -1;
        }
        if (frame.frame_type != AMQP_FRAME_METHOD)
            continue;
        switch (frame.payload.method.id) {
        case AMQP_BASIC_ACK_METHOD: {
            amqp_basic_ack_t *m = frame.payload.method.decoded;
            settle(a, m->delivery_tag, m->multiple, false, confirm, user);
            break;
        }
        case AMQP_BASIC_NACK_METHOD: {
            amqp_basic_nack_t *m = frame.payload.method.decoded;
            settle(a, m->delivery_tag, m->multiple, true, confirm, user);
            break;
        }
        case AMQP_BASIC_RETURN_METHOD:
            if (handle_return(a, err, errlen) < 0)
                return -1;
            break;
        case AMQP_CHANNEL_CLOSE_METHOD: {
            amqp_channel_close_t *m = frame.payload.method.decoded;
            snprintf(err, errlen, "channel closed by broker: %u %.*s", m->reply_code,
                     (int)m->reply_text.len, (const char *)m->reply_text.bytes);
            a->broken = true;
            return -1;
        }
        case AMQP_CONNECTION_CLOSE_METHOD: {
            amqp_connection_close_t *m = frame.payload.method.decoded;
            snprintf(err, errlen, "connection closed by broker: %u %.*s", m->reply_code,
                     (int)m->reply_text.len, (const char *)m->reply_text.bytes);
            a->broken = true;
            return -1;
        }
        default:
            break;
        }
        amqp_maybe_release_buffers(a->conn);
    }
    return 0;
}

int pano_amqp_send(pano_amqp *a, const char *routing_key, const void *body, size_t len,
                   const char *message_id, uint64_t *seq, pano_amqp_confirm_fn confirm,
                   void *user, char *err, size_t errlen)
{
    if (a->broken) {
        snprintf(err, errlen, "connection is closed");
        return -1;
    }
    /* Keep the window bounded: wait for the oldest confirm first. */
    if (pano_amqp_in_flight(a) >= a->window_size &&
        pano_amqp_wait(a, a->next_seq - a->window_size, confirm, user, err, errlen) < 0)
        return -1;

    amqp_basic_properties_t props;
    memset(&props, 0, sizeof props);
    props._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG;
    props.content_type = amqp_cstring_bytes("application/json");
    props.delivery_mode = AMQP_DELIVERY_PERSISTENT;
    if (message_id) {
        props._flags |= AMQP_BASIC_MESSAGE_ID_FLAG;
        props.message_id = amqp_cstring_bytes(message_id);
    }
    amqp_bytes_t payload = {len, (void *)body};
    int status = amqp_basic_publish(a->conn, CHANNEL, amqp_cstring_bytes(a->url.exchange),
                                    amqp_cstring_bytes(routing_key), 1, 0, &props, payload);
    if (status != AMQP_STATUS_OK) {
        snprintf(err, errlen, "publish failed: %s", amqp_error_string2(status));
        a->broken = true;
        return -1;
    }
    uint64_t s = a->next_seq++;
    pending *p = &a->window[s % a->window_size];
    p->seq = s;
    p->returned = false;
    free(p->message_id);
    p->message_id = message_id ? pano_strdup(message_id) : NULL;
    if (seq)
        *seq = s;
    return 0;
}

typedef struct {
    uint64_t seq;
    pano_amqp_outcome outcome;
} single_result;

static void record_outcome(void *user, uint64_t seq, pano_amqp_outcome outcome)
{
    single_result *r = user;
    if (seq == r->seq)
        r->outcome = outcome;
}

int pano_amqp_publish(pano_amqp *a, const char *routing_key, const void *body, size_t len,
                      const char *message_id, char *err, size_t errlen)
{
    single_result r = {0, PANO_AMQP_CONFIRMED};
    if (pano_amqp_send(a, routing_key, body, len, message_id, &r.seq, NULL, NULL, err,
                       errlen) < 0 ||
        pano_amqp_wait(a, r.seq, record_outcome, &r, err, errlen) < 0)
        return -1;
    if (r.outcome == PANO_AMQP_NACKED) {
        snprintf(err, errlen, "the broker refused the message (nack)");
        return 1;
    }
    if (r.outcome == PANO_AMQP_UNROUTABLE) {
        snprintf(err, errlen,
                 "no queue is bound to exchange '%s' for routing key '%s' (is pano-bridge "
                 "running?)",
                 a->url.exchange, routing_key);
        return 1;
    }
    return 0;
}

void pano_amqp_mark_broken(pano_amqp *a)
{
    if (a)
        a->broken = true;
}

void pano_amqp_close(pano_amqp *a)
{
    if (!a)
        return;
    if (a->conn) {
        if (!a->broken) {
            /* A clean close; failures here change nothing for the caller. */
            amqp_channel_close(a->conn, CHANNEL, AMQP_REPLY_SUCCESS);
            amqp_connection_close(a->conn, AMQP_REPLY_SUCCESS);
        }
        amqp_destroy_connection(a->conn);
    }
    free_window(a);
    pano_amqp_url_free(&a->url);
    free(a);
}
