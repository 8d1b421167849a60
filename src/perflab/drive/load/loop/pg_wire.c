/* PostgreSQL's messages, built and read over buffers (pg_wire.h). */
#include "pg_wire.h"

#include <stdlib.h>
#include <string.h>

#include "mem.h"

const char PG_TERMINATE[5] = {'X', 0, 0, 0, 4};

static void put_be32(char *at, uint32_t v) {
    at[0] = (char)(v >> 24);
    at[1] = (char)(v >> 16);
    at[2] = (char)(v >> 8);
    at[3] = (char)v;
}

uint32_t pg_be32(const char *at) {
    const unsigned char *u = (const unsigned char *)at;
    return ((uint32_t)u[0] << 24) | ((uint32_t)u[1] << 16) | ((uint32_t)u[2] << 8) | (uint32_t)u[3];
}

static int reserve(pgbuf_t *b, size_t more) {
    return mem_grow(&b->p, &b->cap, b->len + more);
}

/* Appended unchecked: the caller reserved the room. */
static void put_raw(pgbuf_t *b, const void *data, size_t n) {
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void put_i16(pgbuf_t *b, uint16_t v) {
    b->p[b->len++] = (char)(v >> 8);
    b->p[b->len++] = (char)v;
}

/* A message's type and a length to be filled in by msg_end; -> where the length goes. */
static size_t msg_begin(pgbuf_t *b, char type) {
    b->p[b->len++] = type;
    size_t at = b->len;
    b->len += 4;
    return at;
}

static void msg_end(pgbuf_t *b, size_t at) {
    put_be32(b->p + at, (uint32_t)(b->len - at));
}

int pg_append(pgbuf_t *b, const char *data, size_t n) {
    if (reserve(b, n) < 0)
        return -1;
    put_raw(b, data, n);
    return 0;
}

/* Query: one statement by the simple protocol (BEGIN, COMMIT, ROLLBACK, as pgbench sends them). */
int pg_query(pgbuf_t *b, const char *sql) {
    size_t n = strlen(sql) + 1;
    if (reserve(b, 5 + n) < 0)
        return -1;
    size_t at = msg_begin(b, 'Q');
    put_raw(b, sql, n);
    msg_end(b, at);
    return 0;
}

/* Parse: a named statement, its parameters' types left to the server. */
int pg_parse(pgbuf_t *b, const char *name, const char *sql) {
    size_t nn = strlen(name) + 1, sn = strlen(sql) + 1;
    if (reserve(b, 5 + nn + sn + 2) < 0)
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
int pg_bind(pgbuf_t *b, const char *name, int n, const char *const *values, const uint32_t *lens) {
    size_t nn = strlen(name) + 1, need = 5 + 1 + nn + 2 + 2 + 4;
    for (int i = 0; i < n; i++)
        need += 4 + lens[i];
    if (n < 0 || n > 65535 || reserve(b, need) < 0)
        return -1;
    size_t at = msg_begin(b, 'B');
    b->p[b->len++] = '\0'; /* the unnamed portal */
    put_raw(b, name, nn);
    put_i16(b, 0); /* every parameter in text */
    put_i16(b, (uint16_t)n);
    for (int i = 0; i < n; i++) {
        put_be32(b->p + b->len, lens[i]);
        b->len += 4;
        put_raw(b, values[i], lens[i]);
    }
    put_i16(b, 1); /* one result format for all columns: */
    put_i16(b, 1); /* binary */
    msg_end(b, at);
    return 0;
}

/* Execute the unnamed portal (every row), then Sync: the statement's round trip ends with ReadyForQuery. */
int pg_execute_sync(pgbuf_t *b) {
    static const char tail[] = {'E', 0, 0, 0, 9, 0, 0, 0, 0, 0, 'S', 0, 0, 0, 4};
    return pg_append(b, tail, sizeof tail);
}

/* ---- the backend's messages --------------------------------------------------------------- */

/* The body length a backend message of this type may have: 0 none (a type no server sends), 1
 * any, else exactly (its value - 2): the few fixed-size ones, checked so garbage is found early. */
static int body_rule(char type, uint32_t len) {
    switch (type) {
    case 'Z': return len == 1;                      /* ReadyForQuery: the transaction status */
    case '1': case '2': case '3': case 'n': case 'I': case 'c': case 's':
        return len == 0;                            /* ParseComplete ... PortalSuspended */
    case 'K': return len >= 8;                      /* BackendKeyData (longer keys in protocol 3.2) */
    case 'R': return len >= 4;                      /* Authentication: a code first */
    case 'E': case 'N': return len >= 1;            /* fields, then a terminating NUL */
    case 'S': case 'A': case 'C': case 'D': case 'T': case 't': case 'd': case 'G': case 'H': case 'W':
    case 'V': case 'v':
        return 1;
    default: return 0;
    }
}

static int kept_type(char type) {
    return type == 'E' || type == 'R' || type == 'Z';
}

int pg_between(const pg_reader_t *r) {
    return !r->in_message && r->hdr_len == 0;
}

void pg_reader_reset(pg_reader_t *r) {
    r->buf_len = 0;
    r->left = r->len = 0;
    r->hdr_len = r->in_message = r->keep = 0;
}

void pg_reader_shrink(pg_reader_t *r, size_t keep) {
    if (r->buf_cap > keep) {
        free(r->buf);
        r->buf = NULL;
        r->buf_cap = r->buf_len = 0;
    }
}

void pg_reader_free(pg_reader_t *r) {
    free(r->buf);
    r->buf = NULL;
    r->buf_cap = r->buf_len = 0;
}

int pg_next(pg_reader_t *r, const char *p, size_t n, size_t *used, pg_msg_t *m) {
    size_t pos = 0;
    if (!r->in_message) {
        if (r->hdr_len == 0 && n >= 5) { /* the usual case: the whole message in this piece, read where it is */
            uint32_t len = pg_be32(p + 1);
            if (len < 4 || len > PG_MAX_MESSAGE || !body_rule(p[0], len - 4))
                return PG_BAD;
            if ((size_t)len + 1 <= n) {
                m->type = p[0];
                m->len = len - 4;
                m->body = kept_type(p[0]) ? p + 5 : NULL;
                m->kept = kept_type(p[0]) ? (m->len < PG_KEEP ? m->len : PG_KEEP) : 0;
                *used = (size_t)len + 1;
                return PG_MESSAGE;
            }
        }
        while (r->hdr_len < 5 && pos < n)
            r->hdr[r->hdr_len++] = (uint8_t)p[pos++];
        if (r->hdr_len < 5) {
            *used = pos;
            return PG_MORE;
        }
        uint32_t len = pg_be32((const char *)r->hdr + 1);
        if (len < 4 || len > PG_MAX_MESSAGE || !body_rule((char)r->hdr[0], len - 4))
            return PG_BAD;
        r->len = r->left = len - 4;
        r->keep = (uint8_t)kept_type((char)r->hdr[0]);
        r->buf_len = 0;
        r->in_message = 1;
    }
    size_t take = n - pos < r->left ? n - pos : r->left;
    if (r->keep && r->buf_len < PG_KEEP && take > 0) { /* the kept part only: the rest of a long one is skipped */
        size_t room = PG_KEEP - r->buf_len, copy = take < room ? take : room;
        if (mem_grow(&r->buf, &r->buf_cap, r->buf_len + copy) < 0)
            return PG_NOMEM;
        memcpy(r->buf + r->buf_len, p + pos, copy);
        r->buf_len += copy;
    }
    pos += take;
    r->left -= (uint32_t)take;
    *used = pos;
    if (r->left > 0)
        return PG_MORE;
    m->type = (char)r->hdr[0];
    m->len = r->len;
    m->body = r->keep ? r->buf : NULL;
    m->kept = r->keep ? (uint32_t)r->buf_len : 0;
    r->in_message = 0;
    r->hdr_len = 0;
    return PG_MESSAGE;
}
