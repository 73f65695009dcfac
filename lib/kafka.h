/*
 * kafka.h - librdkafka configuration from pano's configuration.
 *
 * The bridge (producer) and the indexer (consumer) build their librdkafka
 * configuration here, so both read pano.kafka.brokers the same way and both
 * send librdkafka's own log lines through pano's log. Topic names follow the
 * event family: <pano.kafka.topic_prefix><family>.
 */
#ifndef PANO_KAFKA_H
#define PANO_KAFKA_H

#include "config.h"

#include <librdkafka/rdkafka.h>
#include <stddef.h>

/* A new librdkafka configuration with bootstrap.servers and logging set.
 * Returns NULL with a message in err. */
rd_kafka_conf_t *pano_kafka_conf_new(const pano_config *cfg, char *err, size_t errlen);

/* Set one librdkafka property; on failure err names the property. */
int pano_kafka_conf_set(rd_kafka_conf_t *conf, const char *name, const char *value,
                        char *err, size_t errlen);

/* Set the librdkafka properties listed in the configuration key `key`, as
 * "name=value[,name=value...]" (unset or empty: nothing). A name found in
 * `reserved` (NULL-terminated, may be NULL) is refused: the program sets
 * it itself because its guarantees depend on it. Errors name the key and
 * the property, never the value (it may be a password). */
int pano_kafka_conf_set_list(rd_kafka_conf_t *conf, const pano_config *cfg, const char *key,
                             const char *const *reserved, char *err, size_t errlen);

/* The topic of an event family: prefix + family. */
void pano_kafka_topic(const pano_config *cfg, const char *family, char *out, size_t size);

/* Create the family topics and the dead-letter topic if they do not exist
 * yet, so that consumers can subscribe before the first event. */
int pano_kafka_ensure_topics(rd_kafka_t *rk, const pano_config *cfg, char *err,
                             size_t errlen);

#endif
