/* The compiled loop's transport and event loop: simulated users (closed loop) or arrivals (open
 * loop) on one thread, their connections, thinks, deadlines and rows (loop.c); what is spoken on
 * a connection is a protocol's (proto.h: proto_http.c, proto_pg.c), how bytes cross it is a
 * transport's (plain TCP here, TLS in tls.c), and Python's side is binding.c.
 *
 * The users' life is drive/load/engine.py's, to the draw: the same per-user SplitMix64 streams
 * (rng.h) in the same order, the same intended starts (the last end plus the think; an arrival's
 * time from the schedule's own stream), the same stopping rule (nothing intended at or after the
 * window's end; the think then running recorded as pending), the same in-flight bound for
 * arrivals (one past it is dropped and recorded). Every allocation is checked (mem.h): when
 * memory runs out the loop stops, the rows recorded so far are kept, and run() says so.
 */
#ifndef PERFLAB_LOOP_H
#define PERFLAB_LOOP_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "params.h"
#include "rng.h"

/* ---- the rows handed to Python (native_http.ROW_DTYPE, PENDING_DTYPE mirror them) ---------- */

typedef struct {
    double intended, actual, first, end, think;
    int32_t uid;
    int16_t script, tx, klass;
    uint8_t ok, err;
    int32_t detail; /* the status (a check), errno (an OS error), where the server's words are (E_SERVER) */
} row_t;

typedef struct {
    double start, think;
    int32_t uid;
    int16_t tx, klass;
} pending_t;

/* Error kinds (native_http.py words them as the Python path does). */
enum {
    E_NONE = 0,
    E_STATUS = 1,          /* the status is not one expected: detail = status */
    E_BODY = 2,            /* the body lacks the expected text: detail = status */
    E_CONNECT_TIMEOUT = 3, /* no connection within the timeout */
    E_RESPONSE_TIMEOUT = 4,
    E_CONNECT_OS = 5, /* detail = errno */
    E_IO_OS = 6,      /* send/recv failed: detail = errno */
    E_CLOSED = 7,     /* the server closed the connection before the response ended */
    E_MALFORMED = 8,  /* detail: which part (http_parse.h's HM_*, M_EXTRA, M_PG_MESSAGE) */
    E_GIVEN_UP = 9,   /* still in flight when the drain stopped waiting */
    E_KEEPALIVE = 10, /* a kept-alive connection closed before any answer, the request not sent again */
    E_SERVER = 11,    /* PostgreSQL refused: detail = where its ErrorResponse is in take()'s errors */
    E_AUTH = 12,      /* PostgreSQL asked for an authentication the loop does not speak: detail = its code */
    E_SERVER_CLOSED = 13, /* PostgreSQL said why, then closed the connection (FATAL): detail as E_SERVER */
    E_DROPPED = 14,   /* an arrival past the in-flight bound: detail = the bound */
    E_TLS = 15,       /* the TLS handshake or a TLS record failed: detail = where its words are (as E_SERVER) */
    E_NOMEM = 16,     /* the driver ran out of memory in the middle of it (the run fails) */
};

enum { M_EXTRA = 5, M_PG_MESSAGE = 6 }; /* malformed, beside http_parse.h's HM_* */

/* ---- the workload, compiled ------------------------------------------------------------- */

typedef struct {
    int32_t tx;
    int16_t klass;
    int32_t think;
} step_t;

typedef struct {
    int32_t first, count; /* its steps in the step array */
} script_t;

typedef struct {
    int n_params;
    param_t *params; /* drawn in this order from the user's parameter stream */
    double deadline; /* seconds from the transaction's start (PostgreSQL's; HTTP and TCP use timeout) */
} txcommon_t;

/* ---- a user: a simulated user, or an arrival's slot in open loop ---------------------------- */

enum { U_IDLE = 0, U_PARKED, U_CONNECTING, U_HANDSHAKE, U_SENDING, U_READING, U_DONE, U_FREE };

typedef struct {
    int32_t uid;   /* the user's number, or the arrival's (the row's user) */
    int32_t index; /* its place in the loop's users */
    int fd;
    uint8_t state;
    uint8_t partial;  /* the think running is the rest of one begun before logon */
    uint8_t reused;   /* the connection carried an earlier transaction */
    uint8_t retried;  /* the request was sent again once (a kept-alive connection closed) */
    uint8_t opening;  /* logging on before the run (open()), not a transaction */
    uint8_t addr;     /* which resolved address the connection is trying */
    uint8_t want;     /* the transport waits for: 1 readable, 2 writable (a TLS record either way) */
    uint8_t ready;    /* in a ready list */
    int32_t script, step; /* step: the step whose think runs (or whose transaction is in flight); -1 before logon */
    int32_t dl_pos;       /* its place in the deadline heap, -1 when none */
    int32_t next_ready;   /* the ready list's link, or the free slots' */
    double prev_end, think, intended, think_rec, actual, first, deadline;
    uint64_t rng, prng;
    size_t got;       /* bytes of this transaction's answer received */
    size_t sent;      /* bytes of out sent */
    const char *out;  /* what is being sent (the protocol's) */
    size_t out_len;
    drawn_t *drawn;   /* this transaction's parameters (when it has any) */
    void *tls;        /* the transport's per-connection state (tls.c) */
    void *ext;        /* the protocol's per-user state */
} user_t;

typedef struct {
    double when;
    int32_t index;
} park_t;

struct proto;
struct transport;

/* ---- the loop ---------------------------------------------------------------------------- */

typedef struct loop {
    /* the target: every resolved address, tried in turn */
    struct sockaddr_storage *addrs;
    socklen_t *addr_lens;
    int n_addrs;
    double timeout;
    const struct proto *proto;
    void *pdata; /* the protocol's run-wide data */
    const struct transport *transport;
    void *tdata; /* the transport's (tls.c: the SSL_CTX) */
    /* the workload */
    think_t *thinks;
    int n_thinks;
    step_t *steps;
    int n_steps;
    script_t *scripts;
    int n_scripts;
    int32_t *mix;
    double *cumulative;
    int n_mix;
    int init; /* the init script, or -1 */
    txcommon_t *txs;
    int n_txs, max_params;
    uint64_t seed;
    double t0, stagger, stop_at;
    int residual_start;
    /* timing.wake: 0 wakes the loop at each due time (exact); else a due time is put off to the next
     * point of a grid of this many seconds (0.001), so the things due within one step share one
     * wake-up -- think ends and deadlines on the first grid, an open loop's arrivals on the second */
    double think_grid, arrival_grid;
    /* closed loop: users first_user .. + n of all_users */
    int64_t first_user, all_users;
    /* open loop: arrivals at `rate`, poisson or constant, at most max_in_flight in flight */
    int open_loop, poisson, arrivals_over;
    double rate, next_arrival;
    int64_t max_in_flight, share_index, share_count, arrival_i, dropped;
    uint64_t arrival_rng;
    int32_t free_slot; /* open loop: slots whose arrival ended, linked through next_ready */
    /* the users, in chunks of USER_CHUNK (their addresses stay put as open loop adds slots) */
    user_t **chunks;
    int n_chunks, n_users;
    /* the loop */
    int epfd, tfd, efd;
    park_t *park; /* users waiting for a time (logon, the end of a think), a heap */
    int park_len, park_cap;
    int32_t *dl; /* users in flight by deadline, a heap (user.dl_pos) */
    int dl_len, dl_cap;
    int32_t ready, ready_tail, next, next_tail; /* users due now: this turn's, and the next turn's */
    double timer_at;
    int running, finished, cut_done;
    int cut, give_up; /* set by Python's thread (atomics) */
    int error_no;     /* why the loop stopped on its own (ENOMEM, an epoll failure), 0 while it runs */
    int64_t lost;     /* rows memory did not hold (error_no is ENOMEM then) */
    /* shared with Python's thread: under the lock (or atomics) */
    pthread_mutex_t lock;
    row_t *rows;
    size_t rows_len, rows_cap;
    pending_t *pending;
    size_t pending_len, pending_cap;
    char *errs; /* the words of E_SERVER/E_TLS rows since take(), each a uint32 length first */
    size_t errs_len, errs_cap;
    int64_t connects, handshakes, resumed, in_flight, commits, commit_us;
    int64_t timer_wakes; /* the timer's firings: one per grid point at most on a tick wake */
    /* open(): users still logging on, and the first failure */
    int opening_left, open_err, open_detail;
    char *open_msg;
    size_t open_msg_len;
    char recv_buf[1 << 16];
} loop_t;

#define USER_CHUNK 4096
static inline user_t *user_at(loop_t *L, int32_t i) {
    return &L->chunks[i / USER_CHUNK][i % USER_CHUNK];
}

double mono(void);

/* ---- what loop.c does for the protocols and the binding --------------------------------- */

/* The loop made (loop_init: users, epoll, timer) / run until every user stopped / PostgreSQL's
 * logon before the run / the users' connections closed / everything freed. -1: L->error_no. */
int loop_init(loop_t *L, int64_t users);
int loop_run(loop_t *L);
int loop_open(loop_t *L, double timeout);
void loop_close_all(loop_t *L, const char *goodbye, size_t goodbye_len);
void loop_free(loop_t *L);
void loop_poke(loop_t *L);

/* The transaction (or logon) ended: its row, the connection dropped after a network error, the
 * user's next think. `words`: what the server said (E_SERVER, E_SERVER_CLOSED, E_TLS rows). */
void loop_finish(loop_t *L, user_t *u, int ok, int err, int detail);
void loop_finish_words(loop_t *L, user_t *u, int err, const char *words, size_t n);
/* PostgreSQL's logon before the run ended well (open()). */
void loop_logged_on(loop_t *L, user_t *u);

/* u->out[u->sent:u->out_len] sent as far as the socket takes it: 1 all of it (U_READING), 0 the
 * socket is full (U_SENDING: the protocol's writable() goes on), -1 failed (errno in *err). */
int loop_send(loop_t *L, user_t *u, int *err);
/* Read what is waiting after a failed send: an early answer (a 413 before the request was whole)
 * is the answer. 1: the transaction ended on it; 0 it did not. */
int loop_drain(loop_t *L, user_t *u);

void loop_close_conn(loop_t *L, user_t *u);
/* A new connection for the user (its transaction in flight): the protocol's connected() follows. */
void loop_connect(loop_t *L, user_t *u);
void loop_set_deadline(loop_t *L, user_t *u, double when);
/* The loop cannot go on (out of memory, a failed system call the run depends on): it stops at
 * its next turn, the rows so far kept; run() raises OSError(err). */
void loop_fail(loop_t *L, int err);
void loop_count(loop_t *L, int64_t *counter, int64_t n);

static inline const step_t *user_step(loop_t *L, user_t *u) {
    return &L->steps[L->scripts[u->script].first + u->step];
}

#endif
