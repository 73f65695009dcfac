/*
 * store_checkpoint.h - copying the embedded store writer's WAL into its
 * file while the writer goes on writing.
 *
 * SQLite copies a WAL file into its database (a checkpoint) on the
 * connection that just committed, which waits for the copy and the sync of
 * the file, and writes nothing meanwhile. A checkpointer takes most of that
 * off the writer's connection: once the WAL holds `pages` pages after a
 * commit, a thread of its own copies it on a connection of its own while
 * the writer goes on. At the writer's next commit, the writer copies what
 * was committed meanwhile, so that its next transaction starts the WAL
 * again from its beginning (SQLite starts a WAL again only when a writer
 * finds it copied entirely). The WAL stays bounded: a writer that reaches
 * four times `pages` while the thread still copies waits for it.
 *
 * The copies are SQLite's own (PASSIVE checkpoints): what and when is
 * synced is as `synchronous` says, nothing else changes. Only store.c
 * calls this.
 */
#ifndef PANO_STORE_CHECKPOINT_H
#define PANO_STORE_CHECKPOINT_H

#include <sqlite3.h>
#include <stddef.h>

typedef struct store_checkpointer store_checkpointer;

/* A checkpointer for writer, a connection in WAL mode to file; it replaces
 * the connection's automatic checkpoints (sqlite3_wal_hook). Its thread and
 * its connection start the first time they are needed. NULL (and err
 * set) when it cannot be made. */
store_checkpointer *store_checkpointer_new(sqlite3 *writer, const char *file, int pages,
                                           char *err, size_t errlen);
/* How many copies the thread has made. */
unsigned long store_checkpointer_copies(store_checkpointer *c);
/* Stop the thread (after the copy it is making) and close its connection;
 * the writer's connection gets SQLite's automatic checkpoints back. */
void store_checkpointer_free(store_checkpointer *c);

#endif
