/* PostgreSQL's frontend/backend protocol, version 3: the few messages perflab's compiled loop
 * speaks (proto_pg.c's round trips; drive/load/native_pg.py says which workloads), as a library
 * over buffers: no socket, no loop.
 *
 * Frontend: Query (BEGIN, COMMIT, ROLLBACK), Parse, Bind, Execute, Sync, Terminate; the startup
 * message is built in Python. Backend: every message is framed the same way -- a type byte, then
 * a big-endian int32 length that counts itself. The reader (pg_next) hands over one message at a
 * time; it keeps the body only of the types the loop reads (ErrorResponse up to PG_KEEP bytes of
 * its fields, Authentication, ReadyForQuery) and skips every other body as it arrives, never
 * copying it (a DataRow of a gigabyte costs nothing). A message whose type no server sends, or
 * whose length its type cannot have, is malformed.
 */
#ifndef PERFLAB_PG_WIRE_H
#define PERFLAB_PG_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* A growable byte buffer: the messages of one round trip, built before they are sent. */
typedef struct {
    char *p;
    size_t len, cap;
} pgbuf_t;

/* Each appends a message (0), or returns -1 when the buffer could not grow (out of memory). */
int pg_query(pgbuf_t *b, const char *sql);
int pg_parse(pgbuf_t *b, const char *name, const char *sql);
int pg_bind(pgbuf_t *b, const char *name, int n, const char *const *values, const uint32_t *lens);
int pg_execute_sync(pgbuf_t *b);
int pg_append(pgbuf_t *b, const char *data, size_t n);

/* Terminate: the session ends without a complaint in the server's log. */
extern const char PG_TERMINATE[5];

uint32_t pg_be32(const char *at);

#define PG_MAX_MESSAGE (1u << 30) /* a length above this is not a server's */
#define PG_KEEP (1u << 16)        /* an ErrorResponse's fields kept up to this (the text shown is 500 characters) */

enum { PG_MORE = 0, PG_MESSAGE = 1, PG_BAD = -1, PG_NOMEM = -2 };

typedef struct {
    char type;
    const char *body; /* its kept part: all of it for the types the loop reads (up to PG_KEEP), else NULL */
    uint32_t kept, len; /* bytes of body kept, and the whole body's length */
} pg_msg_t;

typedef struct {
    char *buf; /* the kept body of a message that spans reads */
    size_t buf_len, buf_cap;
    uint32_t left; /* its body bytes still to come */
    uint32_t len;
    uint8_t hdr[5], hdr_len, in_message, keep;
} pg_reader_t;

/* The next whole message from p[0:n]: PG_MESSAGE (in *m; *used bytes of p taken, the rest for the
 * next call), PG_MORE (all of p taken, the message goes on), PG_BAD (malformed), PG_NOMEM. A kept
 * body points into p when the message arrived whole, else into the reader's buffer; either way it
 * is valid until the next call. */
int pg_next(pg_reader_t *r, const char *p, size_t n, size_t *used, pg_msg_t *m);

/* Between messages (nothing of one held)? */
int pg_between(const pg_reader_t *r);

void pg_reader_reset(pg_reader_t *r);
void pg_reader_shrink(pg_reader_t *r, size_t keep);
void pg_reader_free(pg_reader_t *r);

#endif
