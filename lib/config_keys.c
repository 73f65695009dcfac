/*
 * config_keys.c - every configuration key pano knows, in one table.
 *
 * The environment name of a key is derived (pano.amqp.url -> PANO_AMQP_URL);
 * env_aliases lists other names, in priority order after the derived one.
 * deploy/pano.properties documents this table; tests/unit keeps them in step.
 */
#include "config.h"

#define NOLIMIT 0, 0

const pano_config_key pano_config_keys[] = {
    /* ---- general ---- */
    {"pano.log.level", PANO_CFG_STR, "info", NOLIMIT, false, {0}, {0},
     "Log level on stderr: error, warn, info or debug."},

    /* ---- workflow context (Pegasus sets these in every job) ---- */
    {"pano.wf_uuid", PANO_CFG_STR, NULL, NOLIMIT, false, {"PEGASUS_WF_UUID"}, {0},
     "Workflow UUID; the key every event is stored and found by."},
    {"pano.wf_label", PANO_CFG_STR, NULL, NOLIMIT, false, {"PEGASUS_WF_LABEL"}, {0},
     "Workflow label."},
    {"pano.dag_job_id", PANO_CFG_STR, NULL, NOLIMIT, false, {"PEGASUS_DAG_JOB_ID"}, {0},
     "DAG node name of the job (e.g. preprocess_ID0000001)."},
    {"pano.condor_job_id", PANO_CFG_STR, NULL, NOLIMIT, false, {"CONDOR_JOBID"}, {0},
     "HTCondor job id (cluster.proc)."},
    {"pano.xformation", PANO_CFG_STR, NULL, NOLIMIT, false, {"PEGASUS_XFORMATION"}, {0},
     "Transformation name."},
    {"pano.task_id", PANO_CFG_STR, NULL, NOLIMIT, false, {"PEGASUS_TASK_ID"}, {0},
     "Task id (the derivation)."},
    {"pano.site", PANO_CFG_STR, NULL, NOLIMIT, false, {"PEGASUS_SITE"}, {0},
     "Execution site label."},
    {"pano.rank", PANO_CFG_INT, "-1", -1, 1e9, false,
     {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMI_ID", "SLURM_PROCID", "ALPS_APP_PE",
      "MPIRUN_RANK"},
     {0},
     "MPI rank of the process (-1: not an MPI rank); read from the launcher's variables."},
    {"pano.hostname", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "Host name put in events (default: gethostname())."},

    /* ---- AMQP publishing ---- */
    {"pano.amqp.url", PANO_CFG_STR, NULL, NOLIMIT, true,
     {"PEGASUS_AMQP_URL", "KICKSTART_MON_URL"}, {"pegasus.catalog.workflow.amqp.url"},
     "Broker URL: amqp[s]://user:pass@host:port/vhost/exchange, or Panorama's "
     "rabbitmq[s]://user:pass@host:port/api/exchanges/VHOST/EXCHANGE/publish. "
     "Unset: events go to the embedded store (pano.store), or to pano.output when set."},
    {"pano.amqp.password_file", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "File holding the broker password (first line); overrides a password in the "
     "URL and keeps it out of URLs, environments and ps output."},
    {"pano.amqp.tls_verify", PANO_CFG_BOOL, "true", NOLIMIT, false, {0}, {0},
     "Verify the broker's TLS certificate and host name (amqps)."},
    {"pano.amqp.cacert", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "CA bundle for amqps (default: the system store)."},
    {"pano.amqp.heartbeat", PANO_CFG_INT, "30", 0, 3600, false, {0}, {0},
     "AMQP heartbeat in seconds (0 disables)."},
    {"pano.amqp.timeout", PANO_CFG_DOUBLE, "10", 0.1, 3600, false, {0}, {0},
     "Seconds to wait for a connection or a publisher confirm."},

    /* ---- output without a broker ---- */
    {"pano.output", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "Without a broker URL: file to append events to as JSON lines (- for stdout)."},
    {"pano.store", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "The embedded store (a directory; each host writes its own SQLite file in it). "
     "Publishers write their events into it when no broker URL and no pano.output is set "
     "(default: $XDG_DATA_HOME/pano/store, else ~/.local/share/pano/store); pano-query and "
     "pano-explorer read it instead of Elasticsearch when it is set."},
    {"pano.store.busy_timeout", PANO_CFG_DOUBLE, "30", 0.1, 3600, false, {0}, {0},
     "Seconds a writer of the embedded store waits for the others before it gives up."},

    /* ---- what publishers send (lib/filter.h) ---- */
    {"pano.events", PANO_CFG_STR, "*", NOLIMIT, false, {0},
     {"pegasus.catalog.workflow.amqp.events"},
     "Events to send: comma-separated patterns, * alone = all. Each is a regular "
     "expression searched in the event name (POSIX extended; Pegasus's re.search), e.g. "
     "stampede.*,^kickstart\\.inv\\.end$; one that is not a valid regex or starts "
     "with * or ? is a glob over the whole name (*.inv.*)."},
    {"pano.monitor.enabled", PANO_CFG_BOOL, "true", NOLIMIT, false, {0}, {0},
     "pano-monitor sends events (false: it still runs the task, and sends nothing)."},
    {"pano.darshan.enabled", PANO_CFG_BOOL, "true", NOLIMIT, false, {0}, {0},
     "pano-darshan sends events (false: nothing is sent)."},
    {"pano.transfer.enabled", PANO_CFG_BOOL, "true", NOLIMIT, false, {0}, {0},
     "pano-transfer sends events (false: it still transfers, and sends nothing; "
     "PEGASUS_TRANSFER_PUBLISH chooses broker or JSON lines)."},
    {"pano.emit.enabled", PANO_CFG_BOOL, "true", NOLIMIT, false, {0}, {0},
     "pano-emit sends events (false: it sends nothing and exits 0)."},
    {"pano.encoding", PANO_CFG_STR, "json", NOLIMIT, false, {0},
     {"pegasus.monitord.encoding"},
     "Always json: accepted so Pegasus properties work unchanged; bp or bson is warned "
     "about with a broker (monitord forces json for AMQP too) and ignored."},

    /* ---- Kafka (pano-bridge, pano-indexer) ---- */
    {"pano.kafka.brokers", PANO_CFG_STR, "127.0.0.1:9092", NOLIMIT, false, {0}, {0},
     "Kafka bootstrap servers, host:port[,host:port...]."},
    {"pano.kafka.partitions", PANO_CFG_INT, "-1", -1, 10000, false, {0}, {0},
     "Partitions of the topics pano creates when they are missing (-1: the broker's "
     "default)."},
    {"pano.kafka.replication_factor", PANO_CFG_INT, "0", 0, 16, false, {0}, {0},
     "Replication factor of the topics pano creates (0: 3, or the number of brokers when "
     "fewer); min.insync.replicas is set to a majority of it (2 of 3), 1 below 3."},
    {"pano.kafka.topic_prefix", PANO_CFG_STR, "pano.", NOLIMIT, false, {0}, {0},
     "Prefix of the Kafka topics: <prefix>kickstart, <prefix>darshan, <prefix>transfer, "
     "<prefix>stampede, <prefix>custom, <prefix>other."},
    {"pano.kafka.dead_letter_topic", PANO_CFG_STR, "pano.dead-letter", NOLIMIT, false, {0},
     {0}, "Kafka topic for messages the bridge rejects, with the reason in headers."},

    /* ---- pano-bridge ---- */
    {"pano.bridge.queue", PANO_CFG_STR, "pano.events", NOLIMIT, false, {0}, {0},
     "Durable AMQP queue the bridge consumes."},
    {"pano.bridge.queue_type", PANO_CFG_STR, "classic", NOLIMIT, false, {0}, {0},
     "Type of the queues the bridge declares: classic, or quorum (replicated over the "
     "RabbitMQ cluster's nodes, kept through a node's failure)."},
    {"pano.bridge.bindings", PANO_CFG_STR, "#", NOLIMIT, false, {0}, {0},
     "Comma-separated binding keys of the queue on the exchange (# = every event; "
     "Panorama's kickstart.#,stampede.#,transfer.# also work)."},
    {"pano.bridge.dead_letter_exchange", PANO_CFG_STR, "pano.dlx", NOLIMIT, false, {0}, {0},
     "Dead-letter exchange declared for the queue (messages that cannot even be "
     "dead-lettered to Kafka end up there)."},
    {"pano.bridge.declare", PANO_CFG_BOOL, "true", NOLIMIT, false, {0}, {0},
     "Declare the queue, exchanges and bindings; false: use what the broker has (passive)."},
    {"pano.bridge.prefetch", PANO_CFG_INT, "4000", 1, 65535, false, {0}, {0},
     "Unacknowledged AMQP messages in flight (bounds the bridge's memory; while Kafka "
     "is down the bridge takes no more than this)."},
    {"pano.bridge.max_message_size", PANO_CFG_SIZE, "1000k", 1024, 1e9, false, {0}, {0},
     "Larger messages are dead-lettered (their first bytes up to this size). Keep it "
     "below the Kafka broker's message.max.bytes (1 MB by default)."},
    {"pano.bridge.schema_dir", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "Directory of the event JSON Schemas (envelope.schema.json, events/NAME.schema.json) "
     "that messages are checked against instead of the ones built into the program "
     "(default: unset, built in)."},
    {"pano.bridge.linger", PANO_CFG_DOUBLE, "0.02", 0, 10, false, {0}, {0},
     "Seconds the Kafka producer waits to fill a batch (librdkafka linger.ms)."},
    {"pano.bridge.kafka_properties", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "Extra librdkafka producer properties, name=value[,name=value...] (e.g. "
     "compression.type=zstd; the bridge's default is lz4). The properties the bridge sets "
     "itself (enable.idempotence, acks, partitioner, linger.ms, message.timeout.ms, ...) "
     "are refused."},
    {"pano.bridge.delivery_timeout", PANO_CFG_DOUBLE, "0", 0, 86400, false, {0}, {0},
     "Seconds librdkafka keeps trying to deliver a message before reporting a failure, "
     "after which the bridge produces it again (0: librdkafka retries until Kafka takes "
     "it)."},
    {"pano.bridge.hold_timeout", PANO_CFG_DOUBLE, "300", 1, 86400, false, {0}, {0},
     "Seconds the bridge keeps unacknowledged messages while Kafka confirms nothing; "
     "then it hands them back to RabbitMQ and consumes again once Kafka answers. Keep it "
     "well below RabbitMQ's consumer_timeout (30 minutes by default)."},
    {"pano.bridge.drain_timeout", PANO_CFG_DOUBLE, "30", 0, 3600, false, {0}, {0},
     "On SIGTERM, seconds to wait for Kafka to confirm what is in flight; the rest is "
     "left to RabbitMQ to deliver again."},
    {"pano.bridge.stats_interval", PANO_CFG_DOUBLE, "30", 0.1, 86400, false, {0}, {0},
     "Seconds between statistics lines in the log (and rewrites of the status file)."},
    {"pano.bridge.status_file", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "File the bridge rewrites with its metrics in Prometheus text format (for "
     "node_exporter's textfile collector, e.g. /var/lib/node_exporter/pano-bridge.prom)."},
    {"pano.bridge.status_port", PANO_CFG_INT, "0", 0, 65535, false, {0}, {0},
     "Port on 127.0.0.1 that serves the metrics at /metrics (0: no endpoint)."},
    {"pano.bridge.dedup_window", PANO_CFG_INT, "100000", 0, 10000000, false, {0}, {0},
     "Event ids of the last N events Kafka confirmed that the bridge remembers, to "
     "acknowledge copies of them without producing them (a publisher resending what the "
     "broker stored but never confirmed, a redelivery). 24-32 bytes each (2.6 MB for "
     "100,000); per bridge process, forgotten when it restarts; 0: off."},

    /* ---- Elasticsearch (pano-indexer) ---- */
    {"pano.es.url", PANO_CFG_STR, "http://127.0.0.1:9200", NOLIMIT, true, {0}, {0},
     "Elasticsearch URL (user:password@ allowed; see pano.es.password_file)."},
    {"pano.es.password_file", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "File holding the Elasticsearch password (first line)."},
    {"pano.es.timeout", PANO_CFG_DOUBLE, "30", 0.1, 3600, false, {0}, {0},
     "Seconds to wait for an Elasticsearch request."},
    {"pano.es.tls_verify", PANO_CFG_BOOL, "true", NOLIMIT, false, {0}, {0},
     "Verify Elasticsearch's TLS certificate."},
    {"pano.es.cacert", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "CA bundle for Elasticsearch over https."},

    /* ---- pano-indexer ---- */
    /* ---- pano-query and pano-explorer ---- */
    {"pano.query.summaries", PANO_CFG_BOOL, "true", NOLIMIT, false, {0}, {0},
     "Read a workflow's runs from their summaries (pano-indexer's, or the embedded store's own) "
     "when they cover it (false: always reduce its events, as for a store written before "
     "summaries existed)."},
    {"pano.query.ingest_delay", PANO_CFG_DOUBLE, "5", 0, 3600, false, {0}, {0},
     "Seconds an event may take from its publisher to being searchable (bridge, Kafka, "
     "indexer, refresh): a run without an end is lost when its latest stored sample is older "
     "than 3 sampling intervals plus this."},

    /* ---- pano-explorer ---- */
    {"pano.explorer.bind", PANO_CFG_STR, "127.0.0.1", NOLIMIT, false, {0}, {0},
     "Address pano-explorer listens on (numeric IPv4 or IPv6). Any other than loopback "
     "needs pano.explorer.password or pano.explorer.password_file (HTTP basic "
     "authentication)."},
    {"pano.explorer.port", PANO_CFG_INT, "8095", 0, 65535, false, {0}, {0},
     "Port pano-explorer listens on (0: any free port, printed at start)."},
    {"pano.explorer.user", PANO_CFG_STR, "pano", NOLIMIT, false, {0}, {0},
     "User name of pano-explorer's basic authentication."},
    {"pano.explorer.password", PANO_CFG_STR, NULL, NOLIMIT, true, {0}, {0},
     "Password of pano-explorer's basic authentication; from the properties file or the "
     "environment only (refused on the command line, where ps would show it)."},
    {"pano.explorer.password_file", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "File holding pano-explorer's password (first line), instead of pano.explorer.password."},
    {"pano.explorer.threads", PANO_CFG_INT, "4", 1, 64, false, {0}, {0},
     "Requests pano-explorer serves at once (each asks Elasticsearch)."},
    {"pano.explorer.www", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "Directory of the explorer's pages (index.html, app.js, style.css); default: "
     "share/pano/explorer of the installation, else explorer/www of the source tree it was "
     "built from."},
    {"pano.explorer.chartjs", PANO_CFG_STR, "/usr/share/javascript/chart.js/chart.min.js",
     NOLIMIT, false, {0}, {0},
     "Chart.js, from Debian's libjs-chart.js, served to the pages as /vendor/chart.js."},

    {"pano.indexer.group", PANO_CFG_STR, "pano-indexer", NOLIMIT, false, {0}, {0},
     "Kafka consumer group; indexers in one group share the partitions."},
    {"pano.indexer.instance_id", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "This indexer's static membership in the group (group.instance.id; default: the host "
     "name): restarted, it gets its partitions back at once. Two indexers of one group need "
     "two ids (the systemd template units use <host>-<instance>)."},
    {"pano.indexer.index_prefix", PANO_CFG_STR, "pano-", NOLIMIT, false, {0}, {0},
     "Prefix of the Elasticsearch indices (<prefix>kickstart, ...)."},
    {"pano.indexer.batch_docs", PANO_CFG_INT, "8000", 1, 100000, false, {0}, {0},
     "Most documents in one batch (split into pano.indexer.concurrency bulk requests)."},
    {"pano.indexer.batch_bytes", PANO_CFG_SIZE, "16M", 1024, 1e9, false, {0}, {0},
     "Most bytes in one batch."},
    {"pano.indexer.concurrency", PANO_CFG_INT, "4", 1, 64, false, {0}, {0},
     "Bulk requests in flight at once for one batch (each at least 1000 documents)."},
    {"pano.indexer.linger", PANO_CFG_DOUBLE, "0.02", 0, 60, false, {0}, {0},
     "Seconds to wait for a batch to fill before sending it."},
    {"pano.indexer.delta_runs", PANO_CFG_INT, "100000", 0, 1e8, false, {0}, {0},
     "Most job runs whose last sample values the indexer keeps, to give samples that come "
     "without delta (Pegasus's kickstart) their delta; the least recently seen run goes "
     "first, and is looked up in Elasticsearch if it comes back. At least twice "
     "pano.indexer.batch_docs; 0 stores such samples as they come."},
    {"pano.indexer.summaries", PANO_CFG_BOOL, "true", NOLIMIT, false, {0}, {0},
     "Keep a summary document per job run (<prefix>summary-<stream>-<period>), updated as its "
     "events arrive, that pano-query reads instead of reducing the events."},
    {"pano.indexer.partition", PANO_CFG_STR, "month", NOLIMIT, false, {0}, {0},
     "Period of each index: events go to <prefix><stream>-<period> by their own ts (UTC): "
     "day (2026.11.25), month (2026.11) or year (2026). DEFAULT[,STREAM=VALUE...] sets "
     "streams apart; streams: kickstart samples stampede darshan transfer custom other "
     "unassigned dead-letter (docs/indexer.md)."},
    {"pano.indexer.retention", PANO_CFG_STR, "0", NOLIMIT, false, {0}, {0},
     "How long an index is kept after its period ended (90d, 2y; 0: forever); older ones "
     "are deleted whole. DEFAULT[,STREAM=VALUE...], e.g. 2y,samples=90d. Events older "
     "than their stream's retention go to the dead-letter index with that reason."},
    {"pano.indexer.retention_interval", PANO_CFG_DOUBLE, "3600", 10, 604800, false, {0}, {0},
     "Seconds between two passes deleting expired indices (pano-indexer --retention runs one)."},
    {"pano.indexer.fallback_index", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "Index for events without a valid wf_uuid (default <prefix>unassigned)."},
    {"pano.indexer.dead_letter_index", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "Index for rejected messages with their reason (default <prefix>dead-letter)."},
    {"pano.indexer.shards", PANO_CFG_INT, "1", 1, 1024, false, {0}, {0},
     "Primary shards of the indices pano creates (index templates)."},
    {"pano.indexer.replicas", PANO_CFG_STR, "auto", NOLIMIT, false, {0}, {0},
     "Replicas of the indices pano creates: a number, or auto (index.auto_expand_replicas "
     "0-1: none on a one-node cluster, which stays green; one copy of every shard on two "
     "nodes or more)."},
    {"pano.indexer.refresh_interval", PANO_CFG_STR, "1s", NOLIMIT, false, {0}, {0},
     "index.refresh_interval of the indices pano creates (how soon events are searchable)."},
    {"pano.indexer.total_fields_limit", PANO_CFG_INT, "2000", 100, 100000, false, {0}, {0},
     "index.mapping.total_fields.limit: bounds the fields extras can add to a mapping."},
    {"pano.indexer.max_backoff", PANO_CFG_DOUBLE, "30", 0.1, 3600, false, {0}, {0},
     "Longest wait in seconds between retries while Elasticsearch fails."},
    {"pano.indexer.drain_timeout", PANO_CFG_DOUBLE, "10", 0, 3600, false, {0}, {0},
     "On SIGTERM, seconds to keep trying to settle the batch in hand."},
    {"pano.indexer.stats_interval", PANO_CFG_DOUBLE, "30", 0.1, 86400, false, {0}, {0},
     "Seconds between statistics lines in the log."},
    {"pano.indexer.status_file", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "File rewritten every second with the status in Prometheus text format "
     "(node_exporter textfile collector)."},
    {"pano.indexer.status_port", PANO_CFG_INT, "0", -1, 65535, false, {0}, {0},
     "Serve the status in Prometheus text format over HTTP on this port (0: off; -1: any "
     "free port, logged)."},
    {"pano.indexer.status_bind", PANO_CFG_STR, "127.0.0.1", NOLIMIT, false, {0}, {0},
     "IPv4 address the status port listens on."},
    {"pano.indexer.kafka_properties", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "Extra librdkafka consumer properties, name=value[,name=value...] "
     "(e.g. session.timeout.ms=10000). group.id, enable.auto.offset.store and "
     "enable.auto.commit are the indexer's own and are refused."},

    /* ---- pano-monitor, pano-emit, the metric API and the spool ---- */
    {"pano.monitor.interval", PANO_CFG_DOUBLE, "1", 0.05, 3600, false,
     {"KICKSTART_MON_INTERVAL"}, {0},
     "pano-monitor: seconds between kickstart.inv.online samples (-i)."},
    {"pano.monitor.on_change", PANO_CFG_BOOL, "false", NOLIMIT, false, {0}, {0},
     "pano-monitor: send a periodic sample only when a value moved by more than "
     "pano.monitor.on_change_threshold since the last sample sent (--on-change)."},
    {"pano.monitor.on_change_threshold", PANO_CFG_DOUBLE, "0.05", 0, 1e6, false, {0}, {0},
     "pano-monitor --on-change: relative change (0.05 = 5 %) of any sampled value that "
     "makes a sample worth sending."},
    {"pano.monitor.level", PANO_CFG_INT, "1", 0, 9, false, {0}, {0},
     "Metrics level (as Dragon's telemetry levels): custom metrics of a higher level "
     "are not sent; 0 also stops pano-monitor's kickstart.inv.online samples (--level)."},
    {"pano.monitor.capture", PANO_CFG_BOOL, "true", NOLIMIT, false, {0}, {0},
     "pano-monitor: read the task's stdout and stderr (when they are not terminals) "
     "for MONITORING_PAYLOAD blocks; the output passes through unchanged."},
    {"pano.monitor.metrics_socket", PANO_CFG_BOOL, "true", NOLIMIT, false, {0}, {0},
     "pano-monitor: open a datagram socket for the task's own metrics (DogStatsD lines, "
     "from any language), its path in the task's PANO_METRICS_SOCKET."},
    {"pano.monitor.pss", PANO_CFG_BOOL, "false", NOLIMIT, false, {0}, {0},
     "pano-monitor: read the tree's proportional and unique set sizes (pss, uss) in every "
     "sample; otherwise in one of every 10, for the end event's peaks only."},
    {"pano.monitor.gpu", PANO_CFG_BOOL, "true", NOLIMIT, false, {0}, {0},
     "pano-monitor: read the GPU use of the task's processes through NVIDIA's NVML "
     "(libnvidia-ml.so.1, loaded when present; nothing happens without it)."},
    {"pano.monitor.net_period", PANO_CFG_DOUBLE, "5", 0, 3600, false, {0}, {0},
     "pano-monitor: seconds between two readings of the tree's network bytes (bsend, "
     "brecv), at most; the samples between carry the last figures (0: every sample). A "
     "reading walks the kernel's table of TCP connections: about 150 us on 24 GiB."},
    {"pano.monitor.payload_max", PANO_CFG_SIZE, "4M", 1024, 1e9, false, {0}, {0},
     "pano-monitor: largest MONITORING_PAYLOAD block; larger ones become "
     "kickstart.payload.error events."},
    {"pano.monitor.linger", PANO_CFG_DOUBLE, "2", 0, 3600, false, {0}, {0},
     "pano-monitor: seconds to keep relaying output after the task exited while "
     "descendants still hold its stdout/stderr open."},
    {"pano.spool.enabled", PANO_CFG_BOOL, "true", NOLIMIT, false, {0}, {0},
     "Keep events the broker cannot take in an on-disk spool and replay them later."},
    {"pano.spool.dir", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "Spool root, one subdirectory per broker (default /var/tmp/pano-spool-<uid>, "
     "mode 0700)."},
    {"pano.spool.max_size", PANO_CFG_SIZE, "64M", 4096, 1e12, false, {0}, {0},
     "Most bytes spooled per broker; past it the oldest events are dropped (and "
     "counted, as errors)."},

    /* ---- pano-darshan ---- */
    {"pano.darshan.parser", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "darshan-parser to run for logs newer than pano-darshan's reader knows "
     "(default: darshan-parser from PATH, when there is one)."},
    {"pano.darshan.state", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "pano-darshan --watch: file recording the logs already published "
     "(default: $XDG_STATE_HOME/pano/darshan-watch.state, i.e. ~/.local/state/...)."},
    {"pano.darshan.rescan_interval", PANO_CFG_DOUBLE, "60", 0.1, 86400, false, {0}, {0},
     "pano-darshan --watch: seconds between full rescans of the watched tree "
     "(a fallback for events inotify misses)."},
    {"pano.darshan.publish_existing", PANO_CFG_BOOL, "false", NOLIMIT, false, {0}, {0},
     "pano-darshan --watch: on the first start (no state file yet), also publish the "
     "logs already present; otherwise they are only recorded as seen."},

    /* ---- pano-transfer ---- */
    {"pano.transfer.publish", PANO_CFG_STR, "auto", NOLIMIT, false, {0}, {0},
     "auto: publish when pano.amqp.url is set; true: publish (warn without a URL); "
     "false: never publish, write JSON lines. PEGASUS_TRANSFER_PUBLISH maps here: "
     "1, true or yes mean true, any other value false."},
    {"pano.transfer.jobs", PANO_CFG_INT, "4", 1, 256, false, {0}, {0},
     "Transfers pano-transfer runs at once (-j)."},
    {"pano.transfer.retries", PANO_CFG_INT, "3", 0, 100, false, {0}, {0},
     "Retries of a transfer whose failure may go away (timeouts, refused connections, "
     "5xx, dropped connections); 404 and the like are not retried."},
    {"pano.transfer.retry_delay", PANO_CFG_DOUBLE, "1", 0, 3600, false, {0}, {0},
     "Seconds before the first retry; doubled for each further retry."},
    {"pano.transfer.retry_max_delay", PANO_CFG_DOUBLE, "60", 0, 86400, false, {0}, {0},
     "Longest wait between two retries, in seconds."},
    {"pano.transfer.connect_timeout", PANO_CFG_DOUBLE, "30", 0.1, 3600, false, {0}, {0},
     "Seconds to wait for a connection."},
    {"pano.transfer.stall_timeout", PANO_CFG_DOUBLE, "60", 0, 86400, false, {0}, {0},
     "An attempt that moves no byte for this many seconds is aborted (0: never)."},
    {"pano.transfer.timeout", PANO_CFG_DOUBLE, "0", 0, 1e7, false, {0}, {0},
     "Longest time of one attempt in seconds (0: no limit)."},
    {"pano.transfer.checksum", PANO_CFG_STR, "none", NOLIMIT, false, {0}, {0},
     "sha256: hash the data moved, verify local copies and report the digest; none."},
    {"pano.transfer.continue", PANO_CFG_BOOL, "false", NOLIMIT, false, {0}, {0},
     "Resume a partial destination left by an earlier run (downloads with ranges; "
     "ftp(s) and sftp uploads)."},
    {"pano.transfer.local_engine", PANO_CFG_STR, "native", NOLIMIT, false, {0}, {0},
     "Local-to-local copies: native (copy_file_range) or curl (libcurl file://)."},
    {"pano.transfer.src_site", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "Source site label for transfers that name none (source_site_name)."},
    {"pano.transfer.dst_site", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "Destination site label for transfers that name none (destination_site_name)."},
    {"pano.transfer.tls_verify", PANO_CFG_BOOL, "true", NOLIMIT, false, {0}, {0},
     "Verify TLS certificates of https and ftps servers."},
    {"pano.transfer.cacert", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "CA bundle for https and ftps (default: the system store)."},
    {"pano.transfer.ssh_key", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "Private key for scp and sftp (default: libcurl's, ~/.ssh/id_rsa)."},
    {"pano.transfer.ssh_known_hosts", PANO_CFG_STR, NULL, NOLIMIT, false, {0}, {0},
     "known_hosts file that scp and sftp servers are checked against."},

    {0},
};
