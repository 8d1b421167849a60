/* PostgreSQL's frontend/backend protocol, version 3: the few messages perflab's compiled loop
 * speaks (http_loop.c's PostgreSQL users; drive/load/native_pg.py says which workloads).
 *
 * Frontend: Query (BEGIN, COMMIT, ROLLBACK), Parse, Bind, Execute, Sync, Terminate; the startup
 * message is built in Python. Backend: every message is framed the same way -- a type byte, then
 * a big-endian int32 length that counts itself -- so one function tells where a message ends;
 * the loop reads the few types it acts on (AuthenticationOk, ErrorResponse, ParseComplete,
 * ReadyForQuery) and passes over the rest (rows, command tags, notices, parameter statuses).
 * No Loop here: buffers in, bytes out.
 */
#ifndef PERFLAB_PG_WIRE_H
#define PERFLAB_PG_WIRE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A growable byte buffer: the messages of one round trip, built before they are sent. */
typedef struct {
    char *p;
    size_t len, cap;
} pgbuf_t;

static int pgbuf_reserve(pgbuf_t *b, size_t more) {
    if (b->len + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (p == NULL)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

static inline void put_be32(char *at, uint32_t v) {
    at[0] = (char)(v >> 24);
    at[1] = (char)(v >> 16);
    at[2] = (char)(v >> 8);
    at[3] = (char)v;
}

static inline uint32_t get_be32(const char *at) {
    const unsigned char *u = (const unsigned char *)at;
    return ((uint32_t)u[0] << 24) | ((uint32_t)u[1] << 16) | ((uint32_t)u[2] << 8) | (uint32_t)u[3];
}

/* Appended unchecked: the caller reserved the room. */
static inline void put_raw(pgbuf_t *b, const void *data, size_t n) {
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static inline void put_i16(pgbuf_t *b, int16_t v) {
    b->p[b->len++] = (char)((uint16_t)v >> 8);
    b->p[b->len++] = (char)v;
}

static inline void put_i32(pgbuf_t *b, int32_t v) {
    put_be32(b->p + b->len, (uint32_t)v);
    b->len += 4;
}

/* A message's type and a length to be filled in by msg_end; -> where the length goes. */
static inline size_t msg_begin(pgbuf_t *b, char type) {
    b->p[b->len++] = type;
    size_t at = b->len;
    b->len += 4;
    return at;
}

static inline void msg_end(pgbuf_t *b, size_t at) {
    put_be32(b->p + at, (uint32_t)(b->len - at));
}

/* Query: one statement by the simple protocol (BEGIN, COMMIT, ROLLBACK, as pgbench sends them). */
static int pg_query(pgbuf_t *b, const char *sql) {
    size_t n = strlen(sql) + 1;
    if (pgbuf_reserve(b, 5 + n) < 0)
        return -1;
    size_t at = msg_begin(b, 'Q');
    put_raw(b, sql, n);
    msg_end(b, at);
    return 0;
}

/* Parse: a named statement, its parameters' types left to the server. */
static int pg_parse(pgbuf_t *b, const char *name, const char *sql) {
    size_t nn = strlen(name) + 1, sn = strlen(sql) + 1;
    if (pgbuf_reserve(b, 5 + nn + sn + 2) < 0)
        return -1;
    size_t at = msg_begin(b, 'P');
    put_raw(b, name, nn);
    put_raw(b, sql, sn);
    put_i16(b, 0);
    msg_end(b, at);
    return 0;
}

/* Bind: the unnamed portal of a named statement, the parameters as text (the server parses
 * them by the types it inferred), the results asked for in binary (as asyncpg asks). */
static int pg_bind(pgbuf_t *b, const char *name, int n, const char *const *values, const uint32_t *lens) {
    size_t nn = strlen(name) + 1, need = 5 + 1 + nn + 2 + 2 + 4;
    for (int i = 0; i < n; i++)
        need += 4 + lens[i];
    if (pgbuf_reserve(b, need) < 0)
        return -1;
    size_t at = msg_begin(b, 'B');
    b->p[b->len++] = '\0'; /* the unnamed portal */
    put_raw(b, name, nn);
    put_i16(b, 0); /* every parameter in text */
    put_i16(b, (int16_t)n);
    for (int i = 0; i < n; i++) {
        put_i32(b, (int32_t)lens[i]);
        put_raw(b, values[i], lens[i]);
    }
    put_i16(b, 1); /* one result format for all columns: */
    put_i16(b, 1); /* binary */
    msg_end(b, at);
    return 0;
}

/* Execute the unnamed portal (every row), then Sync: the statement's round trip ends with ReadyForQuery. */
static int pg_execute_sync(pgbuf_t *b) {
    static const char tail[] = {'E', 0, 0, 0, 9, 0, 0, 0, 0, 0, 'S', 0, 0, 0, 4};
    if (pgbuf_reserve(b, sizeof tail) < 0)
        return -1;
    put_raw(b, tail, sizeof tail);
    return 0;
}

/* The whole backend message at p[0:n]: its length with the type byte (> 0), 0 if it has not all
 * arrived, -1 if its length is impossible. */
#define PG_MAX_MESSAGE (1 << 30)
static inline int64_t pg_message_len(const char *p, size_t n) {
    if (n < 5)
        return 0;
    uint32_t len = get_be32(p + 1);
    if (len < 4 || len > PG_MAX_MESSAGE)
        return -1;
    return (size_t)len + 1 <= n ? (int64_t)len + 1 : 0;
}

#endif
