/*
 * secret.h - reading a password from a file.
 *
 * Passwords stay out of the command line (ps) and the environment by living
 * in a file: pano.amqp.password_file, pano.es.password_file,
 * pano.explorer.password_file. Every program reads them here, the same way:
 * the first line, without its line ending.
 */
#ifndef PANO_SECRET_H
#define PANO_SECRET_H

#include <stddef.h>

/* The first line of the file at path, without "\n" or "\r\n"; free() it.
 * NULL, with "KEY: cannot read PATH: why" in err, when the file cannot be
 * opened or read or its first line is empty. key names the setting the path
 * came from, for the message. */
char *pano_secret_read(const char *key, const char *path, char *err, size_t errlen);

#endif
