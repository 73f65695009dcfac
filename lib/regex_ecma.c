#include "regex_ecma.h"

#include "mem.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *s;
    size_t len, cap;
} strbuf;

static void sb_put(strbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->s = pano_realloc(b->s, b->cap);
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}
static void sb_puts(strbuf *b, const char *s) { sb_put(b, s, strlen(s)); }
static void sb_putc(strbuf *b, char c) { sb_put(b, &c, 1); }

/* Translate one bracket expression starting after '['; *pp points just past
 * the '['. Returns -1 on something POSIX cannot express. */
static int translate_bracket(const char **pp, strbuf *out, char *why, size_t whylen)
{
    const char *p = *pp;
    bool negate = false, rbracket = false, dash = false;
    strbuf items = {0};
    if (*p == '^') {
        negate = true;
        p++;
    }
    bool first = true;
    for (;; first = false) {
        if (*p == '\0') {
            snprintf(why, whylen, "unterminated bracket expression");
            free(items.s);
            return -1;
        }
        if (*p == ']' && !first)
            break;
        if (*p == ']') { /* a literal ']' at the start */
            rbracket = true;
            p++;
            continue;
        }
        if (*p == '\\') {
            char e = p[1];
            p += 2;
            switch (e) {
            case 'd':
                sb_puts(&items, "0-9");
                break;
            case 'w':
                sb_puts(&items, "A-Za-z0-9_");
                break;
            case 's':
                sb_puts(&items, "[:space:]");
                break;
            case 'n':
                sb_putc(&items, '\n');
                break;
            case 't':
                sb_putc(&items, '\t');
                break;
            case 'r':
                sb_putc(&items, '\r');
                break;
            case ']':
                rbracket = true;
                break;
            case '-':
                dash = true;
                break;
            case 'D':
            case 'W':
            case 'S':
            case 'b':
            case '\0':
                snprintf(why, whylen, "\\%c inside [...] has no POSIX equivalent", e ? e : ' ');
                free(items.s);
                return -1;
            default: /* \\ \[ \^ \. ...: the character itself */
                sb_putc(&items, e);
                break;
            }
            continue;
        }
        if (*p == '-' && (first || p[1] == ']')) { /* a literal '-' at either end */
            dash = true;
            p++;
            continue;
        }
        if (*p == '[' && p[1] == ':') { /* a POSIX class, copied as it is */
            const char *end = strstr(p + 2, ":]");
            if (!end) {
                snprintf(why, whylen, "unterminated [: :] class");
                free(items.s);
                return -1;
            }
            sb_put(&items, p, (size_t)(end + 2 - p));
            p = end + 2;
            continue;
        }
        sb_putc(&items, *p++);
    }
    *pp = p + 1; /* past ']' */
    sb_putc(out, '[');
    if (negate)
        sb_putc(out, '^');
    if (rbracket)
        sb_putc(out, ']');
    if (items.s)
        sb_puts(out, items.s);
    if (dash)
        sb_putc(out, '-');
    sb_putc(out, ']');
    free(items.s);
    return 0;
}

char *pano_regex_ecma_to_ere(const char *p, char *why, size_t whylen)
{
    strbuf out = {0};
    sb_puts(&out, "");
    while (*p) {
        char c = *p;
        if (c == '[') {
            p++;
            if (translate_bracket(&p, &out, why, whylen) < 0)
                goto fail;
            continue;
        }
        if (c == '(' && p[1] == '?') {
            if (p[2] == ':') { /* non-capturing group: a group */
                sb_putc(&out, '(');
                p += 3;
                continue;
            }
            snprintf(why, whylen, "lookaround and named groups are not supported");
            goto fail;
        }
        if (c == '\\') {
            char e = p[1];
            p += 2;
            switch (e) {
            case 'd':
                sb_puts(&out, "[0-9]");
                break;
            case 'D':
                sb_puts(&out, "[^0-9]");
                break;
            case 'w':
                sb_puts(&out, "[A-Za-z0-9_]");
                break;
            case 'W':
                sb_puts(&out, "[^A-Za-z0-9_]");
                break;
            case 's':
                sb_puts(&out, "[[:space:]]");
                break;
            case 'S':
                sb_puts(&out, "[^[:space:]]");
                break;
            case 'n':
                sb_putc(&out, '\n');
                break;
            case 't':
                sb_putc(&out, '\t');
                break;
            case 'r':
                sb_putc(&out, '\r');
                break;
            case '\0':
                snprintf(why, whylen, "trailing backslash");
                goto fail;
            default:
                if (strchr(".[](){}*+?^$|\\", e)) {
                    char esc[2] = {'\\', e};
                    sb_put(&out, esc, 2);
                } else if ((e >= '0' && e <= '9') || e == 'b' || e == 'B' || e == 'k' ||
                           e == 'u' || e == 'x' || e == 'p' || e == 'P') {
                    snprintf(why, whylen, "\\%c is not supported", e);
                    goto fail;
                } else
                    sb_putc(&out, e); /* \/ \- \" ...: the character */
            }
            continue;
        }
        sb_putc(&out, c);
        p++;
        /* Lazy quantifiers (*? +? ?? }?) match the same strings. */
        if ((c == '*' || c == '+' || c == '?' || c == '}') && *p == '?')
            p++;
    }
    return out.s;
fail:
    free(out.s);
    return NULL;
}
