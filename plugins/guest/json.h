/* A tiny JSON writer over buf: strings are escaped per RFC 8259 and made valid UTF-8 (each byte of an
 * ill-formed sequence becomes U+FFFD), because source files may hold any bytes and the component model
 * requires every string it carries to be UTF-8. */
#ifndef DRSG_GUEST_JSON_H
#define DRSG_GUEST_JSON_H
#include "abi.h"

void json_str(buf *b, const char *s, size_t len);          /* "…" escaped */
void json_key(buf *b, int *first, const char *key);         /* ,"key": */
void json_member_str(buf *b, int *first, const char *key, const char *s, size_t len);
void json_member_int(buf *b, int *first, const char *key, int64_t v);
/* the same bytes made valid UTF-8 (U+FFFD per bad byte), no escaping: for keys, labels and notes */
void utf8_clean(buf *b, const char *s, size_t len);
#endif
