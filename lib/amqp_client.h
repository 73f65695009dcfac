/*
 * amqp_client.h - AMQP 0-9-1 connections (rabbitmq-c) and confirmed publishing.
 *
 * A connection opens channel 1, and for publishers puts it in confirm mode
 * and declares the exchange (durable topic). Messages are published
 * persistent (delivery_mode 2), as application/json, with the mandatory flag:
 * a message the broker cannot route to any queue comes back and counts as not
 * delivered, so it is never silently dropped.
 *
 * Publishing is pipelined: pano_amqp_send() puts a message on the wire and
 * returns its sequence number; pano_amqp_wait() reads confirms until every
 * message up to a sequence number is settled and reports each one's outcome.
 * pano_amqp_publish() does both for a single message.
 *
 * Every connection tells the broker it understands consumer cancel
 * notifications (capability consumer_cancel_notify), so a consumer learns
 * when its queue is deleted instead of waiting forever.
 */
#ifndef PANO_AMQP_CLIENT_H
#define PANO_AMQP_CLIENT_H

#include "url.h"

#include <amqp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const pano_amqp_url *url;
    const char *password;   /* overrides url->password when not NULL */
    int heartbeat;          /* seconds, 0 = off */
    double timeout;         /* connect, login and confirm timeout, seconds */
    bool tls_verify;        /* verify peer certificate and host name */
    const char *cacert;     /* CA bundle for TLS, NULL = system default */
    bool publisher;         /* confirm mode + declare the exchange */
    size_t max_in_flight;   /* unconfirmed messages before send waits (publisher) */
    const char *connection_name; /* shown by the broker (management UI), may be NULL */
} pano_amqp_options;

typedef enum {
    PANO_AMQP_CONFIRMED = 0, /* the broker took responsibility */
    PANO_AMQP_NACKED,        /* the broker refused it (basic.nack) */
    PANO_AMQP_UNROUTABLE,    /* no queue is bound for its routing key */
} pano_amqp_outcome;

typedef struct pano_amqp pano_amqp;

/* Called by pano_amqp_wait() once per settled message. */
typedef void (*pano_amqp_confirm_fn)(void *user, uint64_t seq, pano_amqp_outcome outcome);

pano_amqp *pano_amqp_connect(const pano_amqp_options *options, char *err, size_t errlen);

/* Publish without waiting for the confirm. message_id (the event_id) may be
 * NULL. Returns 0 and the message's sequence number in *seq, or -1 when the
 * connection failed (it is then unusable: close it and reconnect). When
 * max_in_flight messages are unconfirmed it first waits for confirms,
 * reporting them to confirm(user, ...). */
int pano_amqp_send(pano_amqp *amqp, const char *routing_key, const void *body, size_t len,
                   const char *message_id, uint64_t *seq, pano_amqp_confirm_fn confirm,
                   void *user, char *err, size_t errlen);

/* Wait until every message up to and including seq is settled. Returns 0, or
 * -1 on a connection error or when no confirm came within the timeout. */
int pano_amqp_wait(pano_amqp *amqp, uint64_t seq, pano_amqp_confirm_fn confirm, void *user,
                   char *err, size_t errlen);

/* Send one message and wait for its confirm. Returns 0 if confirmed, 1 if
 * nacked or unroutable (reason in err), -1 on a connection error. */
int pano_amqp_publish(pano_amqp *amqp, const char *routing_key, const void *body, size_t len,
                      const char *message_id, char *err, size_t errlen);

/* Number of messages sent and not yet settled. */
size_t pano_amqp_in_flight(const pano_amqp *amqp);

/* The underlying rabbitmq-c connection and the channel used (1), for
 * consumers that build on this connection setup. */
amqp_connection_state_t pano_amqp_connection(pano_amqp *amqp);

/* Turn an rpc reply into text ("connection closed by broker: 404 NOT_FOUND -
 * no exchange 'x' in vhost '/'"). */
void pano_amqp_reply_text(amqp_rpc_reply_t reply, char *out, size_t size);

void pano_amqp_close(pano_amqp *amqp);

/* Mark the connection as failed (a consumer saw a socket error or a close
 * from the broker): pano_amqp_close() then frees it without the closing
 * handshake, which could otherwise wait for a broker that is gone. */
void pano_amqp_mark_broken(pano_amqp *amqp);

#endif
