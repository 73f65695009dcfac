/*
 * darshan_watch.h - publish each Darshan log that appears under a directory.
 *
 * Darshan writes a log at job end as NAME.darshan_partial in a dated folder
 * (YYYY/M/D) and renames it to NAME.darshan when it is complete. The watch
 * loop acts only on complete *.darshan files: on inotify's close_write and
 * moved_to (folders are watched recursively and new folders added as they
 * appear), and on a periodic full rescan that catches anything inotify
 * missed or could not watch.
 *
 * A state file records each log handled (size, mtime, path), so a log is
 * handled once, also across restarts; a log that changes is handled again.
 * On the first start (no state file) the logs already present are recorded
 * without being handled, unless publish_existing is set.
 */
#ifndef PANO_DARSHAN_WATCH_H
#define PANO_DARSHAN_WATCH_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    PANO_DARSHAN_WATCH_DONE,  /* handled (or failed for good): record it */
    PANO_DARSHAN_WATCH_RETRY, /* not handled now (broker down): try at the next rescan */
} pano_darshan_watch_result;

typedef pano_darshan_watch_result (*pano_darshan_watch_handler)(const char *path, void *ctx);

typedef struct {
    const char *dir;
    const char *state_path;
    double rescan_interval; /* seconds */
    bool publish_existing;
    int stop_fd;    /* the loop ends when this becomes readable (a signalfd), or -1 */
    double run_for; /* end after this many seconds; 0: run until stopped */
    pano_darshan_watch_handler handler;
    void *ctx;
} pano_darshan_watch_options;

/* Returns 0 when stopped, -1 with a message in err when the directory or
 * the state file cannot be used. */
int pano_darshan_watch_run(const pano_darshan_watch_options *opt, char *err, size_t errlen);

#endif
