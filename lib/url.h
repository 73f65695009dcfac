/*
 * url.h - broker URLs: parsing, percent-decoding and redaction.
 *
 * Accepted forms:
 *   amqp[s]://[user[:pass]@]host[:port][/[vhost/]exchange][?heartbeat=N&connection_timeout=S]
 *       The Pegasus form (PEGASUS_AMQP_URL, pegasus.catalog.workflow.amqp.url).
 *       With two path segments the first is the vhost and the second the
 *       exchange; with one it is the exchange (vhost "/"), as Pegasus documents
 *       amqp://host/exchange, except "/%2f", RabbitMQ's spelling of vhost "/";
 *       an empty vhost segment ("//exchange") means "/".
 *       Segments, user and password are percent-decoded ("%2F" is "/"); the
 *       host is a name, an IPv4 address or an IPv6 one in brackets ([::1]).
 *       Defaults: port 5672 (5671 for amqps), user and password guest, vhost
 *       "/", exchange "monitoring".
 *   rabbitmq[s]://user:pass@host:port/api/exchanges/VHOST/EXCHANGE/publish
 *       Panorama's KICKSTART_MON_URL form (the management HTTP API). pano does
 *       not publish over HTTP: it takes the credentials, host, vhost and
 *       exchange and speaks AMQP on the broker's AMQP port, 5672 (5671 for
 *       rabbitmqs), since the port in such a URL is the management port.
 */
#ifndef PANO_URL_H
#define PANO_URL_H

#include <stdbool.h>
#include <stddef.h>

#define PANO_AMQP_DEFAULT_EXCHANGE "monitoring"

typedef struct {
    bool tls;
    char *host;
    int port;
    char *user;
    char *password;
    char *vhost;
    char *exchange;
    int heartbeat;             /* seconds, or -1 when the URL does not say */
    double connection_timeout; /* seconds, or -1 when the URL does not say */
    bool from_management_api;  /* it was a rabbitmq[s]:// URL */
} pano_amqp_url;

/* Returns 0, or -1 with a message in err (which never contains the password). */
int pano_amqp_url_parse(const char *text, pano_amqp_url *out, char *err, size_t errlen);
void pano_amqp_url_free(pano_amqp_url *url);

/* Percent-decode len bytes of s ("%2F" is "/"; a '%' not followed by two hex
 * digits stays as it is). NULL when the result would contain a NUL (%00). */
char *pano_url_decode(const char *s, size_t len);

/* Copy url into out with any password replaced by "***". Works on any
 * scheme://user:pass@host... text, parseable or not. */
void pano_url_redact(const char *url, char *out, size_t size);

#endif
