/*
 * transfer_list.h - what pano-transfer is asked to move.
 *
 * A transfer is a source and a destination, each a local path or a URL
 * (file://, http(s)://, ftp(s)://, scp://, sftp://), with optional site
 * labels (Panorama's source_site_name / destination_site_name) and an
 * optional expected SHA-256.
 *
 * A list file (copy --list FILE) holds one transfer per line, either
 *
 *   - a JSON object: {"src": "...", "dst": "...", "src_site": "...",
 *     "dst_site": "...", "sha256": "..."}; the Panorama names source_url,
 *     destination_url, source_site_name and destination_site_name are
 *     accepted too; or
 *   - two words, "SRC DST" (separated by blanks; no quoting).
 *
 * Blank lines and lines starting with '#' are skipped. Errors name the line.
 * In a list, DST names the destination file itself; only a DST ending in '/'
 * means "into this directory" (no file system lookups while parsing).
 */
#ifndef PANO_TRANSFER_LIST_H
#define PANO_TRANSFER_LIST_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char *src_url;  /* normalized: file:///absolute/path or the URL as given */
    char *dst_url;
    char *src_shown; /* the URLs with any password replaced by "***": */
    char *dst_shown; /* for events and logs */
    char *src_path; /* the local path when the side is local, else NULL */
    char *dst_path;
    char *src_site; /* NULL when unknown */
    char *dst_site;
    char *sha256;   /* expected digest (64 lowercase hex digits) or NULL */
    size_t line;    /* line in the list file (0: command line) */
} pano_transfer_spec;

typedef struct {
    pano_transfer_spec *items;
    size_t len, cap;
} pano_transfer_list;

/* Add one transfer (the command line's SRC DST). A destination ending in
 * '/' or naming an existing local directory gets the source's last path
 * component appended (as cp does).
 * Returns 0, or -1 with a message in err (unsupported scheme, empty name). */
int pano_transfer_list_add(pano_transfer_list *list, const char *src, const char *dst,
                           const char *src_site, const char *dst_site, const char *sha256,
                           size_t line, char *err, size_t errlen);

/* Parse a list file's text. default_src_site/default_dst_site apply where a
 * line names none (may be NULL). Returns 0, or -1 with "line N: ..." in err. */
int pano_transfer_list_parse(pano_transfer_list *list, const char *text, size_t len,
                             const char *default_src_site, const char *default_dst_site,
                             char *err, size_t errlen);

void pano_transfer_list_free(pano_transfer_list *list);

/* ---- URL helpers ---- */

/* The scheme of a URL ("http"), lowercased into out; false for a plain path. */
bool pano_transfer_scheme(const char *text, char *out, size_t size);

/* Is the scheme one pano-transfer moves data with? */
bool pano_transfer_scheme_supported(const char *scheme);

/* A local path as a file:// URL (absolute, percent-encoded). */
char *pano_transfer_path_to_url(const char *path);

/* The local path of a file:// URL (percent-decoded), or NULL when the URL
 * is not file:// on this host. */
char *pano_transfer_url_to_path(const char *url);

#endif
