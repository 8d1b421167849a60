/* PostgreSQL as a protocol of the compiled loop (proto.h): adapters/postgres.py's transaction,
 * round trip by round trip, over pg_wire.c's messages.
 *
 * A transaction of one statement is that statement (autocommit); of several, BEGIN, each
 * statement, COMMIT, each its own round trip as pgbench and the Python path send them. A
 * statement is parsed once per connection (with its first Bind: asyncpg's prepare), then Bind,
 * Execute, Sync. An ErrorResponse fails the transaction with the server's words; inside BEGIN a
 * ROLLBACK follows and the connection is kept (dropped if the ROLLBACK fails too). The deadline
 * counts from the transaction's start; past it the connection is dropped and the transaction is
 * hung (loop.c's deadlines). What a server says on a connection with nothing in flight -- a
 * notice, a parameter's new value, a NOTIFY -- is read and ignored; anything else there drops
 * the connection (the next transaction logs on anew).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "pg_wire.h"
#include "proto.h"
#include "proto_pg.h"

/* Where a user's round trip is: ReadyForQuery ends each, and says what comes next. */
enum { PH_STARTUP = 0, PH_BEGIN, PH_STATEMENT, PH_COMMIT, PH_ROLLBACK };

typedef struct {
    pg_reader_t rd;
    pgbuf_t out;         /* the round trip's messages */
    uint8_t *prepared;   /* a bit per statement: parsed on this connection */
    char *err;           /* the first ErrorResponse's fields (up to PG_KEEP bytes) */
    size_t err_len, err_cap;
    double commit_sent;
    int32_t parsing;     /* the statement whose Parse this round trip carries, + 1 (0: none) */
    int16_t step;
    uint8_t phase, failed; /* failed: 1 an ErrorResponse, 2 another after it */
} pguser_t;

#define KEEP_BYTES 4096

static inline pgdata_t *data(loop_t *L) { return (pgdata_t *)L->pdata; }
static inline const pgtx_t *tx_of(loop_t *L, user_t *u) { return &data(L)->txs[user_step(L, u)->tx]; }

static pguser_t *state(loop_t *L, user_t *u) {
    if (u->ext == NULL) {
        pguser_t *g = mem_calloc(1, sizeof(pguser_t));
        uint8_t *prepared = mem_calloc(((size_t)data(L)->n_sql + 7) / 8 + 1, 1);
        if (g == NULL || prepared == NULL) {
            free(g);
            free(prepared);
            loop_fail(L, ENOMEM);
            loop_close_conn(L, u);
            loop_finish(L, u, 0, E_NOMEM, 0);
            return NULL;
        }
        g->prepared = prepared;
        u->ext = g;
    }
    return u->ext;
}

static void oom(loop_t *L, user_t *u) {
    loop_fail(L, ENOMEM);
    loop_close_conn(L, u);
    loop_finish(L, u, 0, E_NOMEM, 0);
}

/* The round trip's messages, sent as far as the socket takes them (the rest when it is writable). */
static void flush(loop_t *L, user_t *u) {
    pguser_t *g = u->ext;
    u->out = g->out.p;
    u->out_len = g->out.len;
    int e = 0;
    if (loop_send(L, u, &e) < 0) {
        int closed = e == EPIPE || e == ECONNRESET;
        if (closed && loop_drain(L, u)) /* the server said why before it closed */
            return;
        if (u->fd >= 0)
            loop_finish(L, u, 0, closed ? E_CLOSED : E_IO_OS, closed ? 0 : e);
    }
}

static void send_query(loop_t *L, user_t *u, int phase, const char *sql) {
    pguser_t *g = u->ext;
    g->out.len = 0;
    u->sent = 0;
    g->phase = (uint8_t)phase;
    if (pg_query(&g->out, sql) < 0) {
        oom(L, u);
        return;
    }
    flush(L, u);
}

/* A new connection: the startup message; its statements are parsed anew. */
static void pg_connected(loop_t *L, user_t *u) {
    pguser_t *g = state(L, u);
    if (g == NULL)
        return;
    g->parsing = 0;
    g->phase = PH_STARTUP;
    g->failed = 0;
    g->err_len = 0;
    pg_reader_reset(&g->rd);
    g->out.len = 0;
    u->sent = 0;
    if (pg_append(&g->out, data(L)->startup, data(L)->startup_len) < 0) {
        oom(L, u);
        return;
    }
    flush(L, u);
}

/* The transaction's step g->step: Parse the first time on this connection, Bind, Execute, Sync. */
static void statement(loop_t *L, user_t *u) {
    pguser_t *g = u->ext;
    const pgstep_t *st = &tx_of(L, u)->steps[g->step];
    const txcommon_t *tc = &L->txs[user_step(L, u)->tx];
    g->out.len = 0;
    u->sent = 0;
    g->phase = PH_STATEMENT;
    const char *name = data(L)->names[st->stmt];
    if (!(g->prepared[st->stmt >> 3] & (1u << (st->stmt & 7)))) {
        if (pg_parse(&g->out, name, data(L)->sql[st->stmt]) < 0) {
            oom(L, u);
            return;
        }
        g->parsing = st->stmt + 1;
    }
    int n = st->n_args;
    const char *values[n > 0 ? n : 1];
    uint32_t lens[n > 0 ? n : 1];
    char numbers[n > 0 ? n : 1][24];
    for (int i = 0; i < n; i++) {
        int a = st->args[i];
        size_t len = 0;
        if (param_text(&tc->params[a], u->drawn[a], ENC_TEXT, numbers[i], &values[i], &len) < 0) {
            values[i] = "";
            len = 0; /* (native_pg.py admits only values with a text) */
        }
        lens[i] = (uint32_t)len;
    }
    if (pg_bind(&g->out, name, n, values, lens) < 0 || pg_execute_sync(&g->out) < 0) {
        oom(L, u);
        return;
    }
    flush(L, u);
}

/* The transaction's first round trip, on a connection logged on. */
static void pg_begin(loop_t *L, user_t *u) {
    pguser_t *g = state(L, u);
    if (g == NULL)
        return;
    g->failed = 0;
    g->err_len = 0;
    g->step = 0;
    if (tx_of(L, u)->n_steps > 1)
        send_query(L, u, PH_BEGIN, "BEGIN");
    else
        statement(L, u);
}

static void fail_server(loop_t *L, user_t *u, int err) {
    pguser_t *g = u->ext;
    loop_finish_words(L, u, err, g->err, g->err_len);
}

/* ReadyForQuery: the round trip is over; the next one, or the transaction's end.
 * 0: the user reads on; 1: it has moved on (the transaction ended, or its logon did). */
static int ready(loop_t *L, user_t *u) {
    pguser_t *g = u->ext;
    double now = mono();
    switch (g->phase) {
    case PH_STARTUP:
        if (u->opening) { /* open(): logged on before the run; the run sends the transactions */
            loop_logged_on(L, u);
            return 1;
        }
        pg_begin(L, u);
        return 0;
    case PH_BEGIN:
        if (g->failed) {
            fail_server(L, u, E_SERVER);
            return 1;
        }
        statement(L, u);
        return 0;
    case PH_STATEMENT: {
        const pgtx_t *tx = tx_of(L, u);
        if (g->failed) {
            if (tx->n_steps > 1) { /* out of the failed block: the connection is reused */
                send_query(L, u, PH_ROLLBACK, "ROLLBACK");
                return 0;
            }
            fail_server(L, u, E_SERVER);
            return 1;
        }
        if (g->step == 0)
            u->first = now; /* the first statement's result (postgres.py's first_response) */
        if (++g->step < tx->n_steps) {
            statement(L, u);
            return 0;
        }
        if (tx->n_steps > 1) {
            g->commit_sent = mono();
            send_query(L, u, PH_COMMIT, "COMMIT");
            return 0;
        }
        loop_finish(L, u, 1, E_NONE, 0);
        return 1;
    }
    case PH_COMMIT:
        if (g->failed) {
            fail_server(L, u, E_SERVER);
            return 1;
        }
        loop_count(L, &L->commits, 1); /* CommitCounts.committed, rounded alike */
        loop_count(L, &L->commit_us, (int64_t)llround((now - g->commit_sent) * 1e6));
        loop_finish(L, u, 1, E_NONE, 0);
        return 1;
    default: /* PH_ROLLBACK, after a statement's error: the row keeps that error */
        if (g->failed > 1)
            loop_close_conn(L, u); /* the ROLLBACK failed too: the connection is not reused */
        fail_server(L, u, E_SERVER);
        return 1;
    }
}

/* One backend message of a round trip. 0: read on; 1: the user moved on. */
static int message(loop_t *L, user_t *u, const pg_msg_t *m) {
    pguser_t *g = u->ext;
    switch (m->type) {
    case 'Z':
        return ready(L, u);
    case '1': /* ParseComplete: the statement is prepared on this connection from now on */
        if (g->parsing) {
            int32_t s = g->parsing - 1;
            g->prepared[s >> 3] |= (uint8_t)(1u << (s & 7));
            g->parsing = 0;
        }
        return 0;
    case 'E':
        if (g->failed) {
            g->failed = 2;
            return 0;
        }
        g->failed = 1;
        g->err_len = 0;
        if (mem_grow(&g->err, &g->err_cap, m->kept + 1) == 0) {
            memcpy(g->err, m->body, m->kept);
            g->err_len = m->kept;
        }
        if (g->phase == PH_STARTUP) { /* refused at logon (FATAL): the server closes the connection */
            loop_close_conn(L, u);
            fail_server(L, u, E_SERVER);
            return 1;
        }
        return 0;
    case 'R': /* Authentication: 0 is AuthenticationOk; any other asks for what the loop does not speak */
        if (pg_be32(m->body) != 0) {
            loop_close_conn(L, u);
            loop_finish(L, u, 0, E_AUTH, (int)pg_be32(m->body));
            return 1;
        }
        return 0;
    default: /* rows, command tags, BindComplete, notices, parameter statuses, the backend's key */
        return 0;
    }
}

static int malformed(loop_t *L, user_t *u, int r) {
    if (r == PG_NOMEM) {
        oom(L, u);
        return 1;
    }
    loop_close_conn(L, u);
    loop_finish(L, u, 0, E_MALFORMED, M_PG_MESSAGE);
    return 1;
}

static int pg_idle(loop_t *L, user_t *u, const char *p, size_t n);

/* Received bytes: every whole message handled, a part of one kept by the reader for the next. */
static int pg_received(loop_t *L, user_t *u, const char *p, size_t n) {
    pguser_t *g = u->ext;
    size_t pos = 0;
    while (pos < n) {
        pg_msg_t m;
        size_t used = 0;
        int r = pg_next(&g->rd, p + pos, n - pos, &used, &m);
        pos += used;
        if (r < 0)
            return malformed(L, u, r);
        if (r == PG_MORE)
            return 0;
        if (message(L, u, &m)) {
            /* what follows the last ReadyForQuery answers nothing sent: a notice or a parameter's
             * value is read as on an idle connection, anything else drops it */
            if (pos < n && u->fd >= 0 && pg_idle(L, u, p + pos, n - pos) < 0)
                loop_close_conn(L, u);
            return 1;
        }
        if (u->fd < 0 || (u->state != U_READING && u->state != U_SENDING))
            return 1; /* the next round trip's send failed: recorded, the user moved on */
    }
    return 0;
}

/* Messages on a connection with nothing in flight: NoticeResponse, ParameterStatus and
 * NotificationResponse are read and ignored; anything else (an ErrorResponse before the server
 * closes, bytes that are no message) drops the connection. */
static int pg_idle(loop_t *L, user_t *u, const char *p, size_t n) {
    pguser_t *g = u->ext;
    if (g == NULL)
        return -1;
    size_t pos = 0;
    while (pos < n) {
        pg_msg_t m;
        size_t used = 0;
        int r = pg_next(&g->rd, p + pos, n - pos, &used, &m);
        pos += used;
        if (r == PG_NOMEM)
            loop_fail(L, ENOMEM);
        if (r < 0)
            return -1;
        if (r == PG_MORE)
            return 0;
        if (m.type != 'N' && m.type != 'S' && m.type != 'A')
            return -1;
    }
    return 0;
}

static void pg_writable(loop_t *L, user_t *u) {
    flush(L, u);
}

static void pg_closed(loop_t *L, user_t *u, int e) {
    pguser_t *g = u->ext;
    if (g != NULL && g->failed) { /* PostgreSQL said why before it closed (a FATAL error): its words */
        loop_close_conn(L, u);
        fail_server(L, u, E_SERVER_CLOSED);
        return;
    }
    if ((e == 0 || e == ECONNRESET) && u->reused && u->got == 0)
        loop_finish(L, u, 0, E_KEEPALIVE, 0);
    else if (e == 0)
        loop_finish(L, u, 0, E_CLOSED, 0);
    else
        loop_finish(L, u, 0, E_IO_OS, e);
}

static void pg_disconnected(loop_t *L, user_t *u) {
    pguser_t *g = u->ext;
    if (g == NULL)
        return;
    memset(g->prepared, 0, ((size_t)data(L)->n_sql + 7) / 8);
    g->parsing = 0;
    pg_reader_reset(&g->rd);
    pg_reader_shrink(&g->rd, KEEP_BYTES);
    if (g->out.cap > KEEP_BYTES) {
        free(g->out.p);
        g->out.p = NULL;
        g->out.cap = g->out.len = 0;
    }
}

static void pg_free_user(loop_t *L, user_t *u) {
    (void)L;
    pguser_t *g = u->ext;
    if (g == NULL)
        return;
    pg_reader_free(&g->rd);
    free(g->out.p);
    free(g->prepared);
    free(g->err);
    free(g);
    u->ext = NULL;
}

void pgdata_free(pgdata_t *d) {
    if (d == NULL)
        return;
    for (int i = 0; d->txs != NULL && i < d->n_txs; i++) {
        pgtx_t *t = &d->txs[i];
        for (int k = 0; t->steps != NULL && k < t->n_steps; k++)
            free(t->steps[k].args);
        free(t->steps);
    }
    free(d->txs);
    for (int i = 0; d->sql != NULL && i < d->n_sql; i++) {
        free(d->sql[i]);
        free(d->names[i]);
    }
    free(d->sql);
    free(d->names);
    free(d->startup);
    free(d);
}

static void pg_free(loop_t *L) {
    pgdata_free(data(L));
    L->pdata = NULL;
}

/* A user's state marks it a PostgreSQL user that has logged on: open() connects every user, so
 * the logon's startup is what connected() sends. */
const proto_t PROTO_PG = {
    .name = "postgres",
    .connected = pg_connected,
    .begin = pg_begin,
    .writable = pg_writable,
    .received = pg_received,
    .idle = pg_idle,
    .closed = pg_closed,
    .disconnected = pg_disconnected,
    .free_user = pg_free_user,
    .free = pg_free,
};
