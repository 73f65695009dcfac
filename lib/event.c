#include "event.h"

#include "log.h"
#include "mem.h"

#include <math.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/* Context fields in envelope order, with the configuration key of each. */
static const char *const context_fields[][2] = {
    {"wf_uuid", "pano.wf_uuid"},
    {"wf_label", "pano.wf_label"},
    {"dag_job_id", "pano.dag_job_id"},
    {"condor_job_id", "pano.condor_job_id"},
    {"xformation", "pano.xformation"},
    {"task_id", "pano.task_id"},
    {"site", "pano.site"},
};
#define CONTEXT_COUNT (sizeof context_fields / sizeof context_fields[0])

struct pano_source {
    char *context[CONTEXT_COUNT];
    char hostname[256];
    char instance[25]; /* 96 random bits in hex */
    int64_t rank;      /* -1: not an MPI rank */
    uint64_t seq;
};

pano_source *pano_source_new(const pano_config *cfg)
{
    pano_source *src = pano_calloc(1, sizeof *src);
    for (size_t i = 0; i < CONTEXT_COUNT; i++) {
        const char *v = pano_config_str(cfg, context_fields[i][1]);
        src->context[i] = v && *v ? pano_strdup(v) : NULL;
    }
    if (!src->context[0]) {
        /* Without a workflow the events could not be found nor routed: make
         * this run a workflow of its own, and say so. */
        char uuid[37];
        pano_uuid4(uuid);
        src->context[0] = pano_strdup(uuid);
        pano_warn("no workflow UUID configured (PEGASUS_WF_UUID or PANO_WF_UUID); "
                  "using wf_uuid %s for this run",
                  uuid);
    }
    const char *host = pano_config_str(cfg, "pano.hostname");
    if (host && *host)
        snprintf(src->hostname, sizeof src->hostname, "%s", host);
    else if (gethostname(src->hostname, sizeof src->hostname - 1) < 0)
        snprintf(src->hostname, sizeof src->hostname, "unknown");
    src->rank = pano_config_int(cfg, "pano.rank");

    unsigned char rnd[12];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
        /* Without the kernel's randomness, host, time and pid still tell
         * instances apart. */
        pano_warn("getrandom failed; event ids fall back to host, time and pid");
        char material[512], hex[33];
        int n = snprintf(material, sizeof material, "%s %.6f %d", src->hostname, pano_now(),
                         (int)getpid());
        pano_event_id_of(material, (size_t)n, hex);
        memcpy(src->instance, hex, sizeof src->instance - 1);
    } else {
        for (size_t i = 0; i < sizeof rnd; i++)
            snprintf(src->instance + 2 * i, 3, "%02x", rnd[i]);
    }
    return src;
}

void pano_source_free(pano_source *src)
{
    if (!src)
        return;
    for (size_t i = 0; i < CONTEXT_COUNT; i++)
        free(src->context[i]);
    free(src);
}

const char *pano_source_wf_uuid(const pano_source *src) { return src->context[0]; }

bool pano_event_is_envelope_key(const char *key)
{
    static const char *const own[] = {"event", "ts", "event_id", "seq", "hostname", "rank"};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (strcmp(key, own[i]) == 0)
            return true;
    for (size_t i = 0; i < CONTEXT_COUNT; i++)
        if (strcmp(key, context_fields[i][0]) == 0)
            return true;
    return false;
}

void pano_event_payload_block(pano_buf *out, const pano_json *event)
{
    pano_json *block = pano_json_object();
    double ts = 0;
    if (pano_json_get_number(event, "ts", &ts))
        pano_json_set_int(block, "ts", (int64_t)ts);
    const char *name = pano_json_get_str(event, "event");
    pano_json_set_str(block, "monitoring_event", name ? name : "monitoring.additional");
    pano_json *item = pano_json_object();
    for (size_t i = 0; i < pano_json_len(event); i++) {
        const char *key = pano_json_key_at(event, i);
        if (!pano_event_is_envelope_key(key))
            pano_json_add(item, key, pano_json_clone(pano_json_at(event, i)));
    }
    pano_json_append(pano_json_set_array(block, "payload"), item);
    pano_buf_append_str(out, PANO_PAYLOAD_START);
    pano_json_serialize_to(out, block);
    pano_buf_append_str(out, PANO_PAYLOAD_END);
    pano_json_free(block);
}

pano_json *pano_event_new(pano_source *src, const char *name)
{
    pano_json *ev = pano_json_object();
    uint64_t seq = ++src->seq;
    char id[64];
    snprintf(id, sizeof id, "%s-%llu", src->instance, (unsigned long long)seq);

    /* a new object, distinct keys: added without looking for them first */
    pano_json_add(ev, "event", pano_json_string(name));
    pano_json_add(ev, "ts", pano_json_double(pano_now(), 6));
    pano_json_add(ev, "event_id", pano_json_string(id));
    pano_json_add(ev, "seq", pano_json_int((int64_t)seq));
    pano_json_add(ev, "hostname", pano_json_string(src->hostname));
    for (size_t i = 0; i < CONTEXT_COUNT; i++)
        if (src->context[i])
            pano_json_add(ev, context_fields[i][0], pano_json_string(src->context[i]));
    if (src->rank >= 0)
        pano_json_add(ev, "rank", pano_json_int(src->rank));
    return ev;
}

const char *const pano_event_families[] = {"kickstart", "darshan",  "transfer", "stampede",
                                           "custom",    "other",    NULL};
_Static_assert(sizeof pano_event_families / sizeof pano_event_families[0] == PANO_N_FAMILIES + 1,
               "PANO_N_FAMILIES counts pano_event_families");

const char *pano_event_family(const char *name)
{
    size_t word = strcspn(name, ".");
    for (const char *const *f = pano_event_families; f[1]; f++)
        if (strlen(*f) == word && strncmp(name, *f, word) == 0)
            return *f;
    return "other";
}

bool pano_event_name_valid(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len > PANO_EVENT_NAME_MAX)
        return false;
    bool word = false; /* inside a non-empty word */
    for (const char *p = name; *p; p++) {
        if (*p == '.') {
            if (!word)
                return false;
            word = false;
        } else if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                   (*p >= '0' && *p <= '9') || *p == '_' || *p == '-')
            word = true;
        else
            return false;
    }
    return word;
}

void pano_uuid4(char out[37])
{
    unsigned char b[16];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
        /* Fall back to hashing time and pid: unique enough for one host. */
        char material[64], hex[33];
        int n = snprintf(material, sizeof material, "%.6f %d", pano_now(), (int)getpid());
        pano_event_id_of(material, (size_t)n, hex);
        for (int i = 0; i < 16; i++)
            sscanf(hex + 2 * i, "%2hhx", &b[i]);
    }
    b[6] = (unsigned char)((b[6] & 0x0F) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3F) | 0x80); /* RFC 4122 variant */
    snprintf(out, 37,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

/* SHA-256 fetched once: EVP_sha256() makes libcrypto look it up at each
 * digest, which cost more than the digest of a short key. Kept for the
 * life of the process. */
static EVP_MD *sha256;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void fetch_sha256(void)
{
    sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
}

void pano_event_id_of(const void *data, size_t len, char out[33])
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;
    pthread_once(&sha256_once, fetch_sha256);
    if (!EVP_Digest(data, len, digest, &dlen, sha256 ? sha256 : EVP_sha256(), NULL) ||
        dlen < 16) {
        /* libcrypto cannot fail here short of memory exhaustion. */
        pano_error("SHA-256 failed");
        abort();
    }
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[2 * i] = hex[digest[i] >> 4];
        out[2 * i + 1] = hex[digest[i] & 15];
    }
    out[32] = '\0';
}

bool pano_wf_uuid_normalize(const char *in, char out[PANO_WF_UUID_LEN + 1])
{
    char tmp[PANO_WF_UUID_LEN + 1];
    out[0] = '\0';
    if (!in)
        return false;
    for (size_t i = 0; i < PANO_WF_UUID_LEN; i++) {
        char c = in[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-')
                return false;
            tmp[i] = c;
        } else if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))
            tmp[i] = c;
        else if (c >= 'A' && c <= 'F')
            tmp[i] = (char)(c - 'A' + 'a');
        else
            return false; /* includes the NUL of a short string */
    }
    if (in[PANO_WF_UUID_LEN] != '\0')
        return false;
    tmp[PANO_WF_UUID_LEN] = '\0';
    memcpy(out, tmp, sizeof tmp);
    return true;
}

uint64_t pano_hash_bytes(const void *p, size_t n)
{
    uint64_t h = 14695981039346656037ULL;
    for (const unsigned char *c = p, *end = c + n; c < end; c++) {
        h ^= *c;
        h *= 1099511628211ULL;
    }
    return h;
}

uint64_t pano_hash_str(const char *s)
{
    return pano_hash_bytes(s, strlen(s));
}

int64_t pano_event_ms(double ts)
{
    double secs = floor(ts);
    int64_t micros = llround((ts - secs) * 1e6);
    return (int64_t)secs * 1000 + micros / 1000;
}
