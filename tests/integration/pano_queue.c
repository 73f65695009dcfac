/*
 * pano-queue - a test helper: a durable queue bound to the test's exchange.
 *
 *   pano-queue declare URL QUEUE     declare the exchange (durable topic), the
 *                                    queue (durable) and bind it with '#'
 *   pano-queue drain URL QUEUE [IDLE_SECONDS]
 *                                    print every message body, one per line,
 *                                    until the queue stayed empty IDLE_SECONDS
 *                                    (default 1)
 *   pano-queue delete URL QUEUE      delete the queue and the exchange
 *   pano-queue probe URL QUEUE       succeed when the broker takes connections
 */
#include "amqp_client.h"
#include "url.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int check(amqp_connection_state_t c, const char *what)
{
    amqp_rpc_reply_t r = amqp_get_rpc_reply(c);
    if (r.reply_type == AMQP_RESPONSE_NORMAL)
        return 0;
    char why[256];
    pano_amqp_reply_text(r, why, sizeof why);
    fprintf(stderr, "pano-queue: %s: %s\n", what, why);
    return -1;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: pano-queue declare|drain|delete URL QUEUE [IDLE]\n");
        return 2;
    }
    const char *cmd = argv[1];
    pano_amqp_url url;
    char err[512];
    if (pano_amqp_url_parse(argv[2], &url, err, sizeof err) < 0) {
        fprintf(stderr, "pano-queue: %s\n", err);
        return 2;
    }
    pano_amqp_options o = {.url = &url, .timeout = 10, .tls_verify = false};
    pano_amqp *a = pano_amqp_connect(&o, err, sizeof err);
    if (!a) {
        fprintf(stderr, "pano-queue: %s\n", err);
        return 1;
    }
    amqp_connection_state_t c = pano_amqp_connection(a);
    amqp_bytes_t queue = amqp_cstring_bytes(argv[3]);
    amqp_bytes_t exchange = amqp_cstring_bytes(url.exchange);
    int rc = 0;
    if (strcmp(cmd, "probe") == 0) {
        /* connected: the broker is up */
    } else if (strcmp(cmd, "declare") == 0) {
        amqp_exchange_declare(c, 1, exchange, amqp_cstring_bytes("topic"), 0, 1, 0, 0,
                              amqp_empty_table);
        if (check(c, "exchange.declare") < 0)
            return 1;
        amqp_queue_declare(c, 1, queue, 0, 1, 0, 0, amqp_empty_table);
        if (check(c, "queue.declare") < 0)
            return 1;
        amqp_queue_bind(c, 1, queue, exchange, amqp_cstring_bytes("#"), amqp_empty_table);
        if (check(c, "queue.bind") < 0)
            return 1;
    } else if (strcmp(cmd, "drain") == 0) {
        double idle = argc > 4 ? atof(argv[4]) : 1.0;
        double last = now();
        while (now() - last < idle) {
            amqp_rpc_reply_t r = amqp_basic_get(c, 1, queue, 1);
            if (r.reply_type != AMQP_RESPONSE_NORMAL) {
                check(c, "basic.get");
                return 1;
            }
            if (r.reply.id == AMQP_BASIC_GET_EMPTY_METHOD) {
                usleep(50000);
                continue;
            }
            amqp_message_t msg;
            if (amqp_read_message(c, 1, &msg, 0).reply_type != AMQP_RESPONSE_NORMAL) {
                fprintf(stderr, "pano-queue: cannot read a message\n");
                return 1;
            }
            fwrite(msg.body.bytes, 1, msg.body.len, stdout);
            fputc('\n', stdout);
            amqp_destroy_message(&msg);
            last = now();
        }
        fflush(stdout);
    } else if (strcmp(cmd, "delete") == 0) {
        amqp_queue_delete(c, 1, queue, 0, 0);
        rc |= check(c, "queue.delete");
        amqp_exchange_delete(c, 1, exchange, 0);
        rc |= check(c, "exchange.delete");
    } else {
        fprintf(stderr, "pano-queue: unknown command %s\n", cmd);
        rc = 2;
    }
    pano_amqp_close(a);
    pano_amqp_url_free(&url);
    return rc ? 1 : 0;
}
