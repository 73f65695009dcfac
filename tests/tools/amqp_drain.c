/*
 * amqp_drain - the broker's ceiling: a minimal consumer that acknowledges
 * and discards. It consumes QUEUE with the given prefetch, acknowledges
 * cumulatively (multiple=true) every --ack-every messages, and stops after
 * --count messages or when nothing came for --idle seconds.
 *
 * Output: one line on stdout,
 *   consumed N bytes B seconds S rate R
 * With -c it only prints the queue's ready message count (a passive
 * declare: exact, unlike the management API's periodic statistics).
 * where S runs from the first delivery to the last. Exit 0 if --count
 * messages were consumed (or any, without --count), 1 otherwise.
 */
#include "amqp_client.h"
#include "event.h"
#include "log.h"

#include <getopt.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(out, "Usage: amqp_drain -q QUEUE [-u URL] [-p PREFETCH] [-a ACK_EVERY] [-n COUNT] "
                 "[-i IDLE_SECONDS]\n"
                 "       amqp_drain -c -q QUEUE [-u URL]   print the ready message count\n");
}

int main(int argc, char **argv)
{
    pano_log_init("amqp_drain");
    const char *url_text = getenv("PANO_AMQP_URL"), *queue = NULL;
    long prefetch = 1000, ack_every = 0;
    unsigned long long count = 0;
    double idle = 5;
    bool count_only = false;
    int opt;
    while ((opt = getopt(argc, argv, "u:q:p:a:n:i:ch")) != -1) {
        switch (opt) {
        case 'c':
            count_only = true;
            break;
        case 'u':
            url_text = optarg;
            break;
        case 'q':
            queue = optarg;
            break;
        case 'p':
            prefetch = atol(optarg);
            break;
        case 'a':
            ack_every = atol(optarg);
            break;
        case 'n':
            count = strtoull(optarg, NULL, 10);
            break;
        case 'i':
            idle = atof(optarg);
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (!url_text || !queue || prefetch < 1 || prefetch > 65535) {
        usage(stderr);
        return 2;
    }
    if (ack_every <= 0)
        ack_every = prefetch / 10 > 0 ? prefetch / 10 : 1;

    pano_amqp_url url;
    char err[512];
    if (pano_amqp_url_parse(url_text, &url, err, sizeof err) < 0) {
        fprintf(stderr, "amqp_drain: %s\n", err);
        return 2;
    }
    pano_amqp_options ao = {.url = &url, .heartbeat = 30, .timeout = 30};
    pano_amqp *a = pano_amqp_connect(&ao, err, sizeof err);
    if (!a) {
        fprintf(stderr, "amqp_drain: %s\n", err);
        pano_amqp_url_free(&url);
        return 1;
    }
    amqp_connection_state_t c = pano_amqp_connection(a);
    if (count_only) {
        amqp_queue_declare_ok_t *ok = amqp_queue_declare(c, 1, amqp_cstring_bytes(queue), 1, 0, 0,
                                                         0, amqp_empty_table);
        amqp_rpc_reply_t q = amqp_get_rpc_reply(c);
        int status = 0;
        if (q.reply_type != AMQP_RESPONSE_NORMAL || !ok) {
            pano_amqp_reply_text(q, err, sizeof err);
            fprintf(stderr, "amqp_drain: %s: %s\n", queue, err);
            pano_amqp_mark_broken(a);
            status = 1;
        } else
            printf("%u\n", ok->message_count);
        pano_amqp_close(a);
        pano_amqp_url_free(&url);
        return status;
    }
    amqp_basic_qos(c, 1, 0, (uint16_t)prefetch, 0);
    amqp_rpc_reply_t r = amqp_get_rpc_reply(c);
    if (r.reply_type == AMQP_RESPONSE_NORMAL) {
        amqp_basic_consume(c, 1, amqp_cstring_bytes(queue), amqp_empty_bytes, 0, 0, 0,
                           amqp_empty_table);
        r = amqp_get_rpc_reply(c);
    }
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
        pano_amqp_reply_text(r, err, sizeof err);
        fprintf(stderr, "amqp_drain: consuming %s: %s\n", queue, err);
        pano_amqp_close(a);
        pano_amqp_url_free(&url);
        return 1;
    }
    unsigned long long n = 0, bytes = 0, unacked = 0;
    uint64_t last_tag = 0;
    double first = 0, last = 0;
    int rc = 0;
    while (count == 0 || n < count) {
        amqp_envelope_t env;
        struct timeval tv = {(time_t)idle, (suseconds_t)((idle - (double)(time_t)idle) * 1e6)};
        amqp_maybe_release_buffers(c);
        r = amqp_consume_message(c, &env, &tv, 0);
        if (r.reply_type != AMQP_RESPONSE_NORMAL) {
            if (!(r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
                  r.library_error == AMQP_STATUS_TIMEOUT)) {
                pano_amqp_reply_text(r, err, sizeof err);
                fprintf(stderr, "amqp_drain: %s\n", err);
                rc = 1;
            }
            break;
        }
        last = pano_now();
        if (n == 0)
            first = last;
        n++;
        bytes += env.message.body.len;
        last_tag = env.delivery_tag;
        amqp_destroy_envelope(&env);
        if (++unacked >= (unsigned long long)ack_every) {
            if (amqp_basic_ack(c, 1, last_tag, 1) != AMQP_STATUS_OK) {
                fprintf(stderr, "amqp_drain: ack failed\n");
                rc = 1;
                break;
            }
            unacked = 0;
        }
    }
    if (unacked && rc == 0 && amqp_basic_ack(c, 1, last_tag, 1) != AMQP_STATUS_OK)
        rc = 1;
    double secs = last - first;
    printf("consumed %llu bytes %llu seconds %.3f rate %.0f\n", n, bytes, secs,
           secs > 0 ? (double)n / secs : 0.0);
    if (count && n < count)
        rc = 1;
    pano_amqp_close(a);
    pano_amqp_url_free(&url);
    return rc;
}
