/*
 * intake.h - pano-bridge's RabbitMQ side: the connection and its topology,
 * deliveries read one at a time, acks of what Kafka confirmed, nacks of
 * what goes back to the broker.
 *
 * It works on the bridge's state (bridge.h) and asks policy.h when acks are
 * due; it never talks to Kafka. What becomes of a delivery is decided by
 * the loop in bridge.c. Every call but intake_connect needs a connection
 * (b->amqp).
 */
#ifndef PANO_BRIDGE_INTAKE_H
#define PANO_BRIDGE_INTAKE_H

#include "bridge.h"

/* Connect (and with consume, set up the topology and start consuming);
 * false when it failed and a reconnect is scheduled (b->reconnect_at). */
bool intake_connect(bridge *b, bool consume);
/* Close the connection: RabbitMQ requeues every unacked message, and the
 * tags start again (a new generation). A clean close when the connection
 * still works, else just drop it. Nothing without a connection. */
void intake_disconnect(bridge *b, bool clean);

/* What intake_next() found. */
typedef enum {
    INTAKE_DELIVERY, /* a message, in *env: amqp_destroy_envelope() it */
    INTAKE_FRAME,    /* another frame, handled (connection.blocked and the like) */
    INTAKE_IDLE,     /* nothing waiting */
    INTAKE_LOST,     /* the connection or channel is gone (logged): reopen it */
} intake_event;
/* Read what the broker sent next, without waiting. Also sends heartbeats
 * when due. */
intake_event intake_next(bridge *b, amqp_envelope_t *env);
/* Whether frames are already read and waiting in rabbitmq-c's buffer
 * (false without a connection). */
bool intake_buffered(bridge *b);
/* The connection's socket, to poll(). */
int intake_fd(bridge *b);
/* Cancel the consumer: deliveries stop after those already sent. -1 when
 * the broker could not be told (logged). */
int intake_cancel(bridge *b);

/* Ack what Kafka confirmed: cumulatively when due (force: now), one by one
 * behind a head stuck for SINGLE_ACK_AFTER. A failed ack sets
 * b->reconnect_needed. Nothing without a usable connection. */
void intake_send_acks(bridge *b, double now, bool force);
/* Reject a message to the queue's dead-letter exchange (nack, no requeue).
 * False when the broker could not be told. */
bool intake_reject(bridge *b, uint64_t tag);
/* Hand messages back to the queue (nack, requeue). False, with
 * b->reconnect_needed set, when the broker could not be told. */
bool intake_hand_back(bridge *b, const uint64_t *tags, size_t n);

#endif
