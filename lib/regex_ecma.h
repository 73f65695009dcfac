/*
 * regex_ecma.h - ECMA-262 regular expressions (as JSON Schema's "pattern"
 * writes them) translated to POSIX extended regular expressions for
 * regcomp(REG_EXTENDED).
 *
 * \d \w \s and their negations become bracket expressions (inside [...]
 * too: \d \w \s only), \n \t \r the characters, an escaped punctuation
 * character stays escaped or becomes itself, (?:...) a group, and lazy
 * quantifiers (*? +? ?? }?) the greedy ones, which match the same strings.
 * What POSIX cannot express is refused with a reason: lookarounds, named
 * groups, backreferences, \b \B \k \u \x \p \P, \D \W \S \b inside [...],
 * an unterminated [...] or [: :], a trailing backslash. Anchors are kept
 * as they are: an unanchored pattern matches anywhere, as in ECMA-262.
 */
#ifndef PANO_REGEX_ECMA_H
#define PANO_REGEX_ECMA_H

#include <stddef.h>

/* A new POSIX ERE (free() it), or NULL with the reason in why. */
char *pano_regex_ecma_to_ere(const char *pattern, char *why, size_t whylen);

#endif
