/* perflab's closed-loop HTTP users, compiled: the per-request loop of drive/load/engine.py for
 * workloads whose every transaction is one fixed request on a user's own keep-alive connection
 * (drive/load/native_http.py decides which, and runs this loop in a thread of its own).
 *
 * Why: every microsecond the driver spends per request is one the lab cannot spend measuring
 * (issue 28). The Python path -- coroutines, a future and a parser callback per response, a
 * recorder row of Python objects -- costs 2.6x wrk's CPU per request; the kernel's part (a send
 * and a receive on a socket) is the same for both, the gap is the interpreter. Here the users'
 * logons, thinks, script choices, sends, response parsing, checks and recorder rows are C; Python
 * takes the rows in blocks (take()) and does what only it does: the run's edges, the monitor,
 * the error texts, the files.
 *
 * What it keeps of the Python path, to the bit: the same per-user SplitMix64 streams
 * (workload/rng.py) drawn in the same order -- script picks and think times are those the Python
 * engine draws for the same seed --, the same intended starts (the end of the last transaction
 * plus the think), the same stopping rule (no transaction intended at or after the window's
 * end; the think then running is recorded as pending), the same checks (status set or 2xx/3xx,
 * a body substring), the same retry of an idempotent request once when the server closed a
 * kept-alive connection, the same timeouts (connect, then response).
 *
 * The same loop runs the TCP adapter's one-message exchanges (raw mode) and PostgreSQL users
 * (pg_wire.h's messages, the round trips below "PostgreSQL users"; native_pg.py decides which
 * workloads): a transaction there is several round trips on the user's connection, each ended
 * by the server's ReadyForQuery.
 *
 * Linux only (epoll, timerfd, eventfd); setup.py builds it as an optional extension and the
 * Python path is the fallback.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "pg_wire.h"

/* ---- the row handed to Python (native_http.ROW_DTYPE mirrors it) ------------------------- */

typedef struct {
    double intended, actual, first, end, think;
    int32_t uid;
    int16_t script, tx, klass;
    uint8_t ok, err;
    int32_t detail; /* the status (a check), errno (an OS error) */
} row_t;

_Static_assert(sizeof(row_t) == 56, "row_t is 56 bytes (native_http.ROW_DTYPE)");
_Static_assert(offsetof(row_t, uid) == 40 && offsetof(row_t, ok) == 50 && offsetof(row_t, detail) == 52,
               "row_t layout (native_http.ROW_DTYPE)");

typedef struct {
    double start, think;
    int32_t uid;
    int16_t tx, klass;
} pending_t;

_Static_assert(sizeof(pending_t) == 24, "pending_t is 24 bytes (native_http.PENDING_DTYPE)");

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
    E_MALFORMED = 8,  /* detail: which part (native_http.MALFORMED) */
    E_GIVEN_UP = 9,   /* still in flight when the drain stopped waiting */
    E_KEEPALIVE = 10, /* a kept-alive connection closed before any answer, the request not sent again */
    E_SERVER = 11,    /* PostgreSQL refused: detail = where its ErrorResponse is in take()'s errors */
    E_AUTH = 12,      /* PostgreSQL asked for an authentication the loop does not speak: detail = its code */
    E_SERVER_CLOSED = 13, /* PostgreSQL said why, then closed the connection (FATAL): detail as E_SERVER */
};

/* ---- SplitMix64, as workload/rng.py's UserRandom ---------------------------------------- */

#define GAMMA 0x9E3779B97F4A7C15ULL

static inline uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static inline uint64_t rng_init(uint64_t seed, uint64_t stream, uint64_t substream) {
    return mix64(mix64(seed) ^ mix64(stream * 0xD1B54A32D192ED03ULL + substream));
}

static inline double rng_random(uint64_t *state) {
    *state += GAMMA;
    return (double)(mix64(*state) >> 11) * (1.0 / 9007199254740992.0);
}

static inline double rng_normal(uint64_t *state) {
    double u1 = 1.0 - rng_random(state);
    double a = sqrt(-2.0 * log(u1));
    return a * cos(2.0 * M_PI * rng_random(state));
}

static int rng_pick(uint64_t *state, const double *cumulative, int n) {
    if (n == 1) {
        *state += GAMMA; /* as UserRandom.pick: the draw is taken, not mixed */
        return 0;
    }
    double x = rng_random(state) * cumulative[n - 1];
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (cumulative[mid] > x)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* ---- the workload, compiled ------------------------------------------------------------- */

enum { T_CONSTANT = 0, T_UNIFORM = 1, T_EXPONENTIAL = 2, T_LOGNORMAL = 3 };

typedef struct {
    int kind;
    double a, b, c; /* constant: a; uniform: a=low b=high; exponential: a=mean; lognormal: a=mu b=sigma c=mu+sigma^2 */
} think_t;

/* thinktime.py's sample() */
static double think_sample(const think_t *t, uint64_t *rng) {
    switch (t->kind) {
    case T_CONSTANT: return t->a;
    case T_UNIFORM: return t->a + (t->b - t->a) * rng_random(rng);
    case T_EXPONENTIAL: return -t->a * log(1.0 - rng_random(rng));
    default: return exp(t->a + t->b * rng_normal(rng));
    }
}

/* thinktime.py's sample_residual(): what is left of a think caught at a random moment */
static double think_residual(const think_t *t, uint64_t *rng) {
    double r;
    switch (t->kind) {
    case T_CONSTANT: return rng_random(rng) * t->a;
    case T_UNIFORM: {
        r = rng_random(rng);
        double low2 = t->a * t->a, high2 = t->b * t->b;
        return r * sqrt(low2 + rng_random(rng) * (high2 - low2));
    }
    case T_EXPONENTIAL: return -t->a * log(1.0 - rng_random(rng));
    default:
        r = rng_random(rng);
        return r * exp(t->c + t->b * rng_normal(rng));
    }
}

typedef struct {
    int32_t tx;
    int16_t klass;
    int32_t think;
} step_t;

typedef struct {
    int32_t first, count; /* its steps in the step array */
} script_t;

typedef struct {
    char *wire;
    size_t wire_len;
    int idempotent, head;
    uint8_t *ok_status; /* 1000 flags; NULL: any 2xx or 3xx */
    char *expect;       /* HTTP: text the body must hold; raw: the whole reply, exactly */
    size_t expect_len;
    /* raw: not HTTP but a TCP exchange (the TCP adapter's): the message, then reply_len bytes
     * back on the same connection, which stays open (native_http.py's NativeTcpEngine) */
    int raw;
    size_t reply_len;
} txspec_t;

/* ---- PostgreSQL: a transaction's statements and parameters (native_pg.py builds them) ------ */

enum { P_RANDOM_INT = 0, P_CHOICE = 1, P_WEIGHTED = 2, P_SEQUENCE = 3, P_CONSTANT = 4 };

typedef struct {
    int kind;
    int64_t a, b;       /* random_int: low, high; sequence: the next value, the step */
    int n_values;
    char **values;      /* choice, constant: each value's text */
    uint32_t *lens;
    double *cumulative; /* a weighted choice's cumulative weights (UserRandom.pick) */
} pgparam_t;

typedef struct {
    int32_t stmt; /* the statement: Loop.pg_sql[stmt], named pg_names[stmt] on every connection */
    int n_args;
    int32_t *args; /* $1, $2, ...: which of the transaction's parameters */
} pgstep_t;

typedef struct {
    int n_steps; /* more than one: inside BEGIN .. COMMIT */
    pgstep_t *steps;
    int n_params;
    pgparam_t *params; /* drawn in this order from the user's parameter stream (params.py's ParamMaker) */
    double deadline;   /* seconds from the transaction's start (deadline.py) */
} pgtx_t;

/* Where a PostgreSQL user's round trip is: ReadyForQuery ends each, and says what comes next. */
enum { PH_STARTUP = 0, PH_BEGIN, PH_STATEMENT, PH_COMMIT, PH_ROLLBACK };

typedef struct {
    pgbuf_t out;        /* the round trip's messages */
    uint8_t *prepared;  /* a bit per statement: parsed on this connection */
    int32_t parsing;    /* the statement whose Parse this round trip carries, + 1 (0: none) */
    uint64_t prng;      /* workload/rng.py's UserRandom(seed, uid, 1): the parameters' stream */
    char *vals;         /* this transaction's parameter texts */
    size_t vals_len, vals_cap;
    uint32_t *val_off, *val_len;
    double commit_sent;
    int16_t step;
    uint8_t phase, failed, opening; /* failed: 1 an ErrorResponse (kept in the user's body), 2 another after it */
} pguser_t;

/* ---- users ---------------------------------------------------------------------------------- */

enum { U_IDLE = 0, U_PARKED, U_CONNECTING, U_SENDING, U_READING, U_DONE };
enum { B_NONE = 0, B_LENGTH, B_CHUNKED, B_CLOSE };
enum { C_SIZE = 0, C_DATA, C_DATA_CR, C_TRAILER };

typedef struct {
    int32_t uid;
    int fd;
    uint8_t state, partial, reused, retried, keepalive, head_done, body_mode, chunk_state;
    int32_t script, step; /* step: the step whose think runs (or whose transaction is in flight); -1 before logon */
    double prev_end, think, intended, think_rec, actual, first, deadline;
    uint64_t rng;
    int status;
    int64_t left; /* body bytes left (length), of the chunk (chunked) */
    size_t got;   /* bytes of this response received */
    size_t sent;
    char *in; /* the response's head so far, or a chunk-size line */
    size_t in_len, in_cap;
    char *line; /* a chunked body's line so far (gather_line) */
    size_t line_len;
    char *body; /* kept only when the transaction checks its body */
    size_t body_len, body_cap;
} user_t;

typedef struct {
    double when;
    int32_t index;
} park_t;

typedef struct {
    PyObject_HEAD
    /* the target */
    int family;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    double timeout;
    /* the workload */
    txspec_t *txs;
    int n_txs;
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
    /* the users */
    user_t *users;
    int n_users;
    int64_t first_user, all_users;
    uint64_t seed;
    double t0, stagger, stop_at;
    int residual_start;
    /* the loop */
    int epfd, tfd, efd;
    park_t *heap;
    int heap_len;
    double timer_at;
    int32_t *ready, *ready_next;
    int ready_len, ready_next_len;
    int running, finished;
    /* set by Python's thread */
    int cut, give_up;
    /* shared with Python's thread: under the lock */
    pthread_mutex_t lock;
    row_t *rows;
    size_t rows_len, rows_cap;
    pending_t *pending;
    size_t pending_len, pending_cap;
    int64_t connects;
    int64_t in_flight;
    int error_no; /* the loop's own failure (epoll), errno */
    /* PostgreSQL users (pg_wire.h) instead of HTTP or raw exchanges: their own round trips */
    int pg;
    char *pg_startup;
    size_t pg_startup_len;
    char **pg_sql, **pg_names;
    int n_pg_sql;
    pgtx_t *pg_txs; /* n_txs of them */
    pguser_t *pgu;  /* n_users of them */
    int64_t commits, commit_us; /* COMMITs waited for, and their round trips (CommitCounts) */
    char *errs;                 /* under the lock: ErrorResponses of the rows since take(), each a uint32 length first */
    size_t errs_len, errs_cap;
    int opening_left, open_err, open_detail; /* open(): users still logging on, the first failure */
    char *open_msg;
    size_t open_msg_len;
    char recv_buf[1 << 16];
} Loop;

static inline double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- output: rows and pending thinks ---------------------------------------------------- */

static int grow(char **buf, size_t *cap, size_t need);

/* The next slot of a growing array (rows, pending thinks), under the lock. */
static void *next_slot(void **array, size_t *len, size_t *cap, size_t item, size_t first_cap) {
    if (*len == *cap) {
        size_t grown_cap = *cap ? *cap * 2 : first_cap;
        void *grown = realloc(*array, grown_cap * item);
        if (grown == NULL) /* out of memory in the driver: nothing sensible is left to do */
            abort();
        *array = grown;
        *cap = grown_cap;
    }
    return (char *)*array + (*len)++ * item;
}

static void emit_row(Loop *L, user_t *u, double end, int ok, int err, int detail) {
    const script_t *sc = &L->scripts[u->script];
    const step_t *st = &L->steps[sc->first + u->step];
    pthread_mutex_lock(&L->lock);
    row_t *r = next_slot((void **)&L->rows, &L->rows_len, &L->rows_cap, sizeof(row_t), 4096);
    r->intended = u->intended;
    r->actual = u->actual;
    r->first = u->first;
    r->end = end;
    r->think = u->think_rec;
    r->uid = u->uid;
    r->script = (int16_t)u->script;
    r->tx = (int16_t)st->tx;
    r->klass = st->klass;
    r->ok = (uint8_t)ok;
    r->err = (uint8_t)err;
    r->detail = detail;
    if (err == E_SERVER || err == E_SERVER_CLOSED) { /* the server's words go with the row: its ErrorResponse's fields */
        uint32_t n = (uint32_t)u->body_len;
        if (grow(&L->errs, &L->errs_cap, L->errs_len + 4 + n) < 0)
            abort(); /* out of memory in the driver, as next_slot */
        r->detail = (int32_t)L->errs_len;
        memcpy(L->errs + L->errs_len, &n, 4);
        if (n)
            memcpy(L->errs + L->errs_len + 4, u->body, n);
        L->errs_len += 4 + n;
    }
    L->in_flight--;
    pthread_mutex_unlock(&L->lock);
}

static void emit_pending(Loop *L, user_t *u) {
    const script_t *sc = &L->scripts[u->script];
    const step_t *st = &L->steps[sc->first + u->step];
    pthread_mutex_lock(&L->lock);
    pending_t *p = next_slot((void **)&L->pending, &L->pending_len, &L->pending_cap, sizeof(pending_t), 256);
    p->start = u->prev_end;
    p->think = u->think;
    p->uid = u->uid;
    p->tx = (int16_t)st->tx;
    p->klass = st->klass;
    pthread_mutex_unlock(&L->lock);
}

/* ---- the parked users' heap (wake-up time, then user) ------------------------------------ */

static inline int park_less(const park_t *a, const park_t *b) {
    return a->when < b->when || (a->when == b->when && a->index < b->index);
}

static void heap_push(Loop *L, double when, int32_t index) {
    int i = L->heap_len++;
    L->heap[i].when = when;
    L->heap[i].index = index;
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (!park_less(&L->heap[i], &L->heap[parent]))
            break;
        park_t t = L->heap[i];
        L->heap[i] = L->heap[parent];
        L->heap[parent] = t;
        i = parent;
    }
}

static park_t heap_pop(Loop *L) {
    park_t top = L->heap[0];
    L->heap[0] = L->heap[--L->heap_len];
    int i = 0, n = L->heap_len;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && park_less(&L->heap[l], &L->heap[m]))
            m = l;
        if (r < n && park_less(&L->heap[r], &L->heap[m]))
            m = r;
        if (m == i)
            break;
        park_t t = L->heap[i];
        L->heap[i] = L->heap[m];
        L->heap[m] = t;
        i = m;
    }
    return top;
}

static void arm_timer(Loop *L) {
    double when = L->heap_len ? L->heap[0].when : 0.0;
    if (when == L->timer_at)
        return;
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    if (L->heap_len) {
        if (when <= 0.0)
            when = 1e-9;
        its.it_value.tv_sec = (time_t)when;
        its.it_value.tv_nsec = (long)((when - (double)its.it_value.tv_sec) * 1e9);
        if (its.it_value.tv_nsec >= 1000000000L)
            its.it_value.tv_nsec = 999999999L;
        if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
            its.it_value.tv_nsec = 1;
    } /* else all zero: disarmed */
    timerfd_settime(L->tfd, TFD_TIMER_ABSTIME, &its, NULL);
    L->timer_at = when;
}

/* ---- the users' life: logon, think, transaction ------------------------------------------ */

static inline int stopped_for(Loop *L, double intended) {
    return intended >= L->stop_at || __atomic_load_n(&L->cut, __ATOMIC_RELAXED);
}

static inline void make_ready(Loop *L, user_t *u) {
    L->ready_next[L->ready_next_len++] = (int32_t)(u - L->users);
}

/* engine.py's _next_think: draw the think before the user's next transaction; the user is made
 * ready (due now), parked, or done (its transaction would fall at or after the window's end). */
static void next_think(Loop *L, user_t *u, double now) {
    const script_t *sc = &L->scripts[u->script];
    while (u->step >= sc->count) { /* the script is done: the next, drawn from the mix */
        u->script = L->mix[rng_pick(&u->rng, L->cumulative, L->n_mix)];
        sc = &L->scripts[u->script];
        u->step = 0;
        u->partial = 0;
    }
    const step_t *st = &L->steps[sc->first + u->step];
    const think_t *t = &L->thinks[st->think];
    double think = u->partial ? think_residual(t, &u->rng) : think_sample(t, &u->rng);
    u->think = think;
    double intended = u->prev_end + think;
    if (stopped_for(L, intended)) {
        if (!u->partial)
            emit_pending(L, u);
        u->state = U_DONE;
        return;
    }
    if (intended - now > 0) {
        u->state = U_PARKED;
        heap_push(L, intended, (int32_t)(u - L->users));
        return;
    }
    u->state = U_IDLE;
    make_ready(L, u);
}

static void logon(Loop *L, user_t *u, double now) {
    double at = u->prev_end;
    u->prev_end = L->stagger == 0.0 ? (at > now ? at : now) : at;
    u->step = 0;
    u->partial = (uint8_t)L->residual_start;
    u->script = L->init >= 0 ? L->init : L->mix[rng_pick(&u->rng, L->cumulative, L->n_mix)];
    next_think(L, u, now);
}

static void close_conn(Loop *L, user_t *u) {
    if (u->fd >= 0) {
        epoll_ctl(L->epfd, EPOLL_CTL_DEL, u->fd, NULL);
        close(u->fd);
        u->fd = -1;
    }
}

static void open_failed(Loop *L, user_t *u, int err, int detail);

/* The transaction ended: its row, and the user's next think. */
static void finish(Loop *L, user_t *u, int ok, int err, int detail) {
    if (L->pg && L->pgu[u - L->users].opening) { /* a logon before the run (open()), not a transaction */
        open_failed(L, u, err, detail);
        return;
    }
    double end = mono();
    emit_row(L, u, end, ok, err, detail);
    if (!ok && err != E_STATUS && err != E_BODY && err != E_SERVER)
        close_conn(L, u); /* the connection is not reused after a network error */
    u->prev_end = end;
    u->step++;
    next_think(L, u, end);
}

static int watch(Loop *L, user_t *u, uint32_t events, int op) {
    struct epoll_event ev;
    ev.events = events;
    ev.data.u64 = (uint64_t)(u - L->users) + 3; /* 0, 1, 2: the timer, the eventfd, unused */
    return epoll_ctl(L->epfd, op, u->fd, &ev);
}

static void reset_response(user_t *u) {
    u->in_len = 0;
    u->body_len = 0;
    u->head_done = 0;
    u->body_mode = B_NONE;
    u->chunk_state = C_SIZE;
    u->status = 0;
    u->left = 0;
    u->got = 0;
    u->keepalive = 1;
    u->line_len = 0;
}

static void send_request(Loop *L, user_t *u, double now);
static void pg_startup(Loop *L, user_t *u);
static void pg_first(Loop *L, user_t *u);
static void pg_flush(Loop *L, user_t *u);
static void pg_draw(Loop *L, user_t *u);

/* The connection is up: the request, or PostgreSQL's logon first. */
static void connected(Loop *L, user_t *u, double now) {
    if (L->pg)
        pg_startup(L, u);
    else
        send_request(L, u, now);
}

static void connect_user(Loop *L, user_t *u, double now) {
    int fd = socket(L->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        finish(L, u, 0, E_CONNECT_OS, errno);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* as uvloop's TCP transports */
    u->fd = fd;
    u->reused = 0;
    if (!L->pg) /* a PostgreSQL transaction's deadline counts from its start, logon included */
        u->deadline = now + L->timeout;
    if (connect(fd, (struct sockaddr *)&L->addr, L->addr_len) == 0) {
        watch(L, u, EPOLLIN, EPOLL_CTL_ADD);
        __atomic_add_fetch(&L->connects, 1, __ATOMIC_RELAXED);
        connected(L, u, now);
        return;
    }
    if (errno != EINPROGRESS) {
        int e = errno;
        close(fd);
        u->fd = -1;
        finish(L, u, 0, E_CONNECT_OS, e);
        return;
    }
    u->state = U_CONNECTING;
    watch(L, u, EPOLLOUT | EPOLLIN, EPOLL_CTL_ADD);
}

static void start_transaction(Loop *L, user_t *u, double now) {
    double intended = u->prev_end + u->think;
    if (stopped_for(L, intended)) { /* engine.py's _active_user: nothing issued */
        u->state = U_DONE;
        return;
    }
    u->intended = intended;
    u->think_rec = u->partial ? NAN : u->think; /* the rest of a think begun before logon: no whole think */
    u->partial = 0;
    u->actual = mono(); /* when it is issued: a turn's later users are issued later than its start */
    u->first = NAN;
    u->retried = 0;
    pthread_mutex_lock(&L->lock);
    L->in_flight++;
    pthread_mutex_unlock(&L->lock);
    if (L->pg) {
        pg_draw(L, u);
        u->deadline = u->actual + L->pg_txs[L->steps[L->scripts[u->script].first + u->step].tx].deadline;
    }
    if (u->fd < 0)
        connect_user(L, u, now);
    else if (L->pg)
        pg_first(L, u);
    else
        send_request(L, u, now);
}

/* The server closed a kept-alive connection before answering: an idempotent request is sent
 * again once, on a new connection (http.py's KeepAliveClosed). */
static int retry_closed(Loop *L, user_t *u, double now) {
    const txspec_t *tx = &L->txs[L->steps[L->scripts[u->script].first + u->step].tx];
    if (!u->reused || u->got > 0 || u->retried || !tx->idempotent)
        return 0;
    u->retried = 1;
    close_conn(L, u);
    connect_user(L, u, now);
    return 1;
}

/* data[u->sent:len] sent as far as the socket takes it. 1: all of it (the user reads next);
 * 0: the socket is full (the user waits, U_SENDING, for it to be writable); -1: an error, its
 * errno in *error. */
static int send_more(Loop *L, user_t *u, const char *data, size_t len, int *error) {
    while (u->sent < len) {
        ssize_t n = send(u->fd, data + u->sent, len - u->sent, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (u->state != U_SENDING) {
                    u->state = U_SENDING;
                    watch(L, u, EPOLLIN | EPOLLOUT, EPOLL_CTL_MOD);
                }
                return 0;
            }
            *error = errno;
            return -1;
        }
        u->sent += (size_t)n;
    }
    if (u->state == U_SENDING)
        watch(L, u, EPOLLIN, EPOLL_CTL_MOD);
    u->state = U_READING;
    return 1;
}

static void send_request(Loop *L, user_t *u, double now) {
    const txspec_t *tx = &L->txs[L->steps[L->scripts[u->script].first + u->step].tx];
    if (u->state != U_SENDING) {
        u->sent = 0;
        reset_response(u);
        u->deadline = now + L->timeout; /* a send that blocks times out too (as the response does) */
    }
    int e = 0, sent = send_more(L, u, tx->wire, tx->wire_len, &e);
    if (sent == 0)
        return;
    if (sent < 0) {
        if (e == EPIPE || e == ECONNRESET) {
            if (retry_closed(L, u, now))
                return;
            if (u->reused && u->got == 0) {
                finish(L, u, 0, E_KEEPALIVE, 0);
                return;
            }
        }
        finish(L, u, 0, E_IO_OS, e);
        return;
    }
    u->deadline = now + L->timeout; /* the response's timeout counts from the request's send */
}

/* ---- the response ----------------------------------------------------------------------- */

static int grow(char **buf, size_t *cap, size_t need) {
    if (need <= *cap)
        return 0;
    size_t cap2 = *cap ? *cap : 1024;
    while (cap2 < need)
        cap2 *= 2;
    char *p = realloc(*buf, cap2);
    if (p == NULL)
        return -1;
    *buf = p;
    *cap = cap2;
    return 0;
}

/* case-insensitive search of a token in a header value */
static int value_has(const char *v, size_t n, const char *token) {
    size_t t = strlen(token);
    for (size_t i = 0; i + t <= n; i++)
        if (strncasecmp(v + i, token, t) == 0)
            return 1;
    return 0;
}

enum { M_STATUS_LINE = 1, M_CONTENT_LENGTH = 2, M_CHUNK_SIZE = 3, M_HEAD_TOO_LARGE = 4, M_EXTRA = 5, M_PG_MESSAGE = 6 };
#define MAX_HEAD (1 << 20)

/* Parse a complete head in u->in[0:n]. 0: parsed; > 0: malformed (M_*); < 0: an interim
 * response (1xx), to be skipped. */
static int parse_head(Loop *L, user_t *u, const char *h, size_t n) {
    if (n < 12 || memcmp(h, "HTTP/1.", 7) != 0 || h[8] != ' ')
        return M_STATUS_LINE;
    int minor = h[7] - '0';
    if (h[9] < '0' || h[9] > '9' || h[10] < '0' || h[10] > '9' || h[11] < '0' || h[11] > '9')
        return M_STATUS_LINE;
    u->status = (h[9] - '0') * 100 + (h[10] - '0') * 10 + (h[11] - '0');
    if (u->status >= 100 && u->status < 200)
        return -1;
    int close_hdr = 0, keep_hdr = 0, chunked = 0;
    int64_t length = -1;
    const char *p = memchr(h, '\n', n);
    const char *end = h + n;
    while (p != NULL && p + 1 < end) {
        const char *line = p + 1;
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (eol == NULL)
            break;
        size_t len = (size_t)(eol - line);
        if (len && line[len - 1] == '\r')
            len--;
        const char *colon = memchr(line, ':', len);
        if (colon != NULL) {
            size_t name = (size_t)(colon - line);
            const char *v = colon + 1;
            size_t vn = len - name - 1;
            while (vn && (*v == ' ' || *v == '\t')) {
                v++;
                vn--;
            }
            if (name == 14 && strncasecmp(line, "content-length", 14) == 0) {
                int64_t x = 0;
                size_t i = 0;
                for (; i < vn && v[i] >= '0' && v[i] <= '9'; i++) {
                    x = x * 10 + (v[i] - '0');
                    if (x > ((int64_t)1 << 50))
                        return M_CONTENT_LENGTH;
                }
                while (i < vn && (v[i] == ' ' || v[i] == '\t'))
                    i++;
                if (i == 0 || i != vn)
                    return M_CONTENT_LENGTH;
                length = x;
            } else if (name == 17 && strncasecmp(line, "transfer-encoding", 17) == 0) {
                chunked = value_has(v, vn, "chunked");
            } else if (name == 10 && strncasecmp(line, "connection", 10) == 0) {
                close_hdr |= value_has(v, vn, "close");
                keep_hdr |= value_has(v, vn, "keep-alive");
            }
        }
        p = eol;
    }
    u->keepalive = minor >= 1 ? !close_hdr : keep_hdr;
    const txspec_t *tx = &L->txs[L->steps[L->scripts[u->script].first + u->step].tx];
    if (tx->head || u->status == 204 || u->status == 304)
        u->body_mode = B_NONE;
    else if (chunked) {
        u->body_mode = B_CHUNKED;
        u->chunk_state = C_SIZE;
    } else if (length >= 0) {
        u->body_mode = B_LENGTH;
        u->left = length;
    } else {
        u->body_mode = B_CLOSE;
        u->keepalive = 0;
    }
    return 0;
}

static int keep_body(Loop *L, user_t *u, const char *p, size_t n) {
    const txspec_t *tx = &L->txs[L->steps[L->scripts[u->script].first + u->step].tx];
    if (tx->expect == NULL || n == 0)
        return 0;
    if (grow(&u->body, &u->body_cap, u->body_len + n) < 0)
        return -1;
    memcpy(u->body + u->body_len, p, n);
    u->body_len += n;
    return 0;
}

/* The response is whole: judge it (http_request.py's problem()), record, and go on. */
static void response_done(Loop *L, user_t *u, int leftover) {
    const txspec_t *tx = &L->txs[L->steps[L->scripts[u->script].first + u->step].tx];
    int s = u->status, ok = 1, err = E_NONE;
    if (tx->ok_status != NULL ? !(s >= 0 && s < 1000 && tx->ok_status[s]) : !(s >= 200 && s < 400)) {
        ok = 0;
        err = E_STATUS;
    } else if (tx->expect != NULL &&
               (u->body_len < tx->expect_len || memmem(u->body, u->body_len, tx->expect, tx->expect_len) == NULL)) {
        ok = 0;
        err = E_BODY;
    }
    if (!u->keepalive || leftover)
        close_conn(L, u); /* bytes after the response answer no request: the connection is dropped */
    else {
        u->reused = 1;
        u->state = U_IDLE;
    }
    finish(L, u, ok, err, s);
}

/* A line of a chunked body (a chunk's size, the CRLF after its data, a trailer), which may
 * arrive in pieces: gathered in u->line. 1: a whole line in u->line[0:u->line_len] (its CR LF
 * cut off); 0: more to come; -1: too long. */
#define MAX_LINE 256
static int gather_line(user_t *u, const char **p, size_t *n) {
    const char *nl = memchr(*p, '\n', *n);
    size_t part = nl ? (size_t)(nl - *p) + 1 : *n;
    if (u->line == NULL && (u->line = malloc(MAX_LINE)) == NULL)
        return -1;
    if (u->line_len + part > MAX_LINE)
        return -1;
    memcpy(u->line + u->line_len, *p, part);
    u->line_len += part;
    *p += part;
    *n -= part;
    if (nl == NULL)
        return 0;
    while (u->line_len && (u->line[u->line_len - 1] == '\n' || u->line[u->line_len - 1] == '\r'))
        u->line_len--;
    return 1;
}

/* The body's bytes: returns 1 when the response completed (the user moved on), 0 for more,
 * -1 after an error (recorded). `p` may point into u->in, which is not written here. */
static int feed_body(Loop *L, user_t *u, const char *p, size_t n) {
    switch (u->body_mode) {
    case B_NONE:
        response_done(L, u, n > 0);
        return 1;
    case B_CLOSE:
        if (keep_body(L, u, p, n) < 0)
            goto too_large;
        return 0; /* ends when the server closes */
    case B_LENGTH: {
        size_t take = (int64_t)n < u->left ? n : (size_t)u->left;
        if (keep_body(L, u, p, take) < 0)
            goto too_large;
        u->left -= (int64_t)take;
        if (u->left == 0) {
            response_done(L, u, n > take);
            return 1;
        }
        return 0;
    }
    default: /* B_CHUNKED */
        while (n > 0) {
            if (u->chunk_state == C_DATA) {
                size_t take = (int64_t)n < u->left ? n : (size_t)u->left;
                if (keep_body(L, u, p, take) < 0)
                    goto too_large;
                u->left -= (int64_t)take;
                p += take;
                n -= take;
                if (u->left == 0)
                    u->chunk_state = C_DATA_CR;
                continue;
            }
            int got = gather_line(u, &p, &n);
            if (got < 0)
                goto bad_chunk;
            if (got == 0)
                return 0;
            const char *line = u->line;
            size_t ln = u->line_len;
            u->line_len = 0;
            if (u->chunk_state == C_DATA_CR) {
                if (ln != 0)
                    goto bad_chunk;
                u->chunk_state = C_SIZE;
            } else if (u->chunk_state == C_SIZE) {
                int64_t size = 0;
                size_t i = 0;
                for (; i < ln; i++) {
                    char c = line[i];
                    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                          : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
                    if (d < 0)
                        break;
                    size = size * 16 + d;
                    if (size > ((int64_t)1 << 50))
                        goto bad_chunk;
                }
                if (i == 0 || (i < ln && line[i] != ';' && line[i] != ' ' && line[i] != '\t'))
                    goto bad_chunk;
                if (size == 0)
                    u->chunk_state = C_TRAILER;
                else {
                    u->left = size;
                    u->chunk_state = C_DATA;
                }
            } else if (ln == 0) { /* C_TRAILER: an empty line ends the message */
                response_done(L, u, n > 0);
                return 1;
            }
        }
        return 0;
    }
too_large:
    finish(L, u, 0, E_MALFORMED, M_HEAD_TOO_LARGE);
    return -1;
bad_chunk:
    finish(L, u, 0, E_MALFORMED, M_CHUNK_SIZE);
    return -1;
}

/* Received bytes: the head gathered in u->in until it is whole, then the body. */
/* A raw exchange's reply so far: whole at reply_len bytes, and then judged (the TCP adapter's
 * readexactly and its comparison). 1: the transaction ended; 0: more to come; -1: it failed. */
static int feed_raw(Loop *L, user_t *u, const txspec_t *tx, const char *p, size_t n) {
    if (u->got > tx->reply_len) { /* more than the reply: answers no request */
        finish(L, u, 0, E_MALFORMED, M_EXTRA);
        return -1;
    }
    if (keep_body(L, u, p, n) < 0) {
        finish(L, u, 0, E_MALFORMED, M_HEAD_TOO_LARGE);
        return -1;
    }
    if (u->got < tx->reply_len)
        return 0;
    int ok = tx->expect == NULL ||
             (u->body_len == tx->expect_len && memcmp(u->body, tx->expect, tx->expect_len) == 0);
    u->reused = 1;
    u->state = U_IDLE;
    finish(L, u, ok, ok ? E_NONE : E_BODY, 0);
    return 1;
}

static int feed_pg(Loop *L, user_t *u, const char *p, size_t n);

static int feed(Loop *L, user_t *u, const char *p, size_t n) {
    if (L->pg)
        return feed_pg(L, u, p, n);
    const txspec_t *tx = &L->txs[L->steps[L->scripts[u->script].first + u->step].tx];
    if (tx->raw)
        return feed_raw(L, u, tx, p, n);
    if (u->head_done)
        return feed_body(L, u, p, n);
    size_t old = u->in_len;
    if (grow(&u->in, &u->in_cap, old + n) < 0) {
        finish(L, u, 0, E_MALFORMED, M_HEAD_TOO_LARGE);
        return -1;
    }
    memcpy(u->in + old, p, n);
    u->in_len += n;
    for (;;) {
        size_t from = old >= 3 ? old - 3 : 0;
        char *hend = u->in_len > from ? memmem(u->in + from, u->in_len - from, "\r\n\r\n", 4) : NULL;
        if (hend == NULL) {
            if (u->in_len > MAX_HEAD) {
                finish(L, u, 0, E_MALFORMED, M_HEAD_TOO_LARGE);
                return -1;
            }
            return 0;
        }
        size_t head_len = (size_t)(hend - u->in) + 4;
        int r = parse_head(L, u, u->in, head_len);
        if (r > 0) {
            finish(L, u, 0, E_MALFORMED, r);
            return -1;
        }
        if (r < 0) { /* an interim response (1xx): skipped, what follows is parsed as the response */
            memmove(u->in, u->in + head_len, u->in_len - head_len);
            u->in_len -= head_len;
            old = 0;
            continue;
        }
        u->head_done = 1;
        size_t rest = u->in_len - head_len;
        u->in_len = 0; /* u->in is not written again before the next response */
        return feed_body(L, u, u->in + head_len, rest);
    }
}

/* ---- PostgreSQL users (pg_wire.h) ---------------------------------------------------------
 * adapters/postgres.py's transaction, round trip by round trip: a transaction of one statement
 * is that statement (autocommit); of several, BEGIN, each statement, COMMIT, each its own round
 * trip as pgbench and the Python path send them. A statement is parsed once per connection (with
 * its first Bind: asyncpg's prepare), then Bind, Execute, Sync. An ErrorResponse fails the
 * transaction with the server's words; inside BEGIN a ROLLBACK follows and the connection is
 * kept (dropped if the ROLLBACK fails too). The deadline counts from the transaction's start;
 * past it the connection is dropped and the transaction is hung (the sweep). */

#define PG_OOM(x) do { if ((x) < 0) abort(); } while (0) /* out of memory in the driver, as next_slot */

static inline pguser_t *pg_user(Loop *L, user_t *u) { return &L->pgu[u - L->users]; }

static inline const pgtx_t *pg_tx(Loop *L, user_t *u) {
    return &L->pg_txs[L->steps[L->scripts[u->script].first + u->step].tx];
}

/* The round trip's messages, sent as far as the socket takes them (the rest when it is writable). */
static void pg_flush(Loop *L, user_t *u) {
    pguser_t *g = pg_user(L, u);
    int e = 0;
    if (send_more(L, u, g->out.p, g->out.len, &e) < 0) {
        int closed = e == EPIPE || e == ECONNRESET;
        finish(L, u, 0, closed ? E_CLOSED : E_IO_OS, closed ? 0 : e);
    }
}

static void pg_send_query(Loop *L, user_t *u, int phase, const char *sql) {
    pguser_t *g = pg_user(L, u);
    g->out.len = 0;
    u->sent = 0;
    g->phase = (uint8_t)phase;
    PG_OOM(pg_query(&g->out, sql));
    pg_flush(L, u);
}

/* A new connection: the startup message; its statements are parsed anew. */
static void pg_startup(Loop *L, user_t *u) {
    pguser_t *g = pg_user(L, u);
    memset(g->prepared, 0, ((size_t)L->n_pg_sql + 7) / 8);
    g->parsing = 0;
    g->phase = PH_STARTUP;
    u->in_len = 0;
    g->out.len = 0;
    u->sent = 0;
    PG_OOM(pgbuf_reserve(&g->out, L->pg_startup_len));
    put_raw(&g->out, L->pg_startup, L->pg_startup_len);
    pg_flush(L, u);
}

/* The transaction's step g->step: Parse the first time on this connection, Bind, Execute, Sync. */
static void pg_statement(Loop *L, user_t *u) {
    pguser_t *g = pg_user(L, u);
    const pgstep_t *st = &pg_tx(L, u)->steps[g->step];
    g->out.len = 0;
    u->sent = 0;
    g->phase = PH_STATEMENT;
    const char *name = L->pg_names[st->stmt];
    if (!(g->prepared[st->stmt >> 3] & (1u << (st->stmt & 7)))) {
        PG_OOM(pg_parse(&g->out, name, L->pg_sql[st->stmt]));
        g->parsing = st->stmt + 1;
    }
    const char *values[st->n_args > 0 ? st->n_args : 1];
    uint32_t lens[st->n_args > 0 ? st->n_args : 1];
    for (int i = 0; i < st->n_args; i++) {
        values[i] = g->vals + g->val_off[st->args[i]];
        lens[i] = g->val_len[st->args[i]];
    }
    PG_OOM(pg_bind(&g->out, name, st->n_args, values, lens));
    PG_OOM(pg_execute_sync(&g->out));
    pg_flush(L, u);
}

/* The transaction's first round trip, on a connection logged on. */
static void pg_first(Loop *L, user_t *u) {
    pguser_t *g = pg_user(L, u);
    g->failed = 0;
    u->body_len = 0;
    g->step = 0;
    if (pg_tx(L, u)->n_steps > 1)
        pg_send_query(L, u, PH_BEGIN, "BEGIN");
    else
        pg_statement(L, u);
}

/* The transaction's parameters, as params.py's generators draw them from the same stream. */
static void pg_draw(Loop *L, user_t *u) {
    pguser_t *g = pg_user(L, u);
    pgtx_t *tx = &L->pg_txs[L->steps[L->scripts[u->script].first + u->step].tx];
    g->vals_len = 0;
    for (int i = 0; i < tx->n_params; i++) {
        pgparam_t *p = &tx->params[i];
        char number[24];
        const char *text = number;
        size_t n;
        int k;
        switch (p->kind) {
        case P_RANDOM_INT: /* low + int(random() * (high - low + 1)); the range is below 2^53 (native_pg.py) */
            n = (size_t)snprintf(number, sizeof number, "%lld",
                                 (long long)(p->a + (int64_t)(rng_random(&g->prng) * (double)(p->b - p->a + 1))));
            break;
        case P_SEQUENCE: /* one counter per transaction's parameter, shared by the users (as itertools.count) */
            n = (size_t)snprintf(number, sizeof number, "%lld", (long long)p->a);
            p->a += p->b;
            break;
        case P_CHOICE:
            k = (int)(rng_random(&g->prng) * (double)p->n_values);
            text = p->values[k];
            n = p->lens[k];
            break;
        case P_WEIGHTED:
            k = rng_pick(&g->prng, p->cumulative, p->n_values);
            text = p->values[k];
            n = p->lens[k];
            break;
        default: /* P_CONSTANT: no draw */
            text = p->values[0];
            n = p->lens[0];
        }
        PG_OOM(grow(&g->vals, &g->vals_cap, g->vals_len + n + 1));
        memcpy(g->vals + g->vals_len, text, n);
        g->val_off[i] = (uint32_t)g->vals_len;
        g->val_len[i] = (uint32_t)n;
        g->vals_len += n;
    }
}

/* ReadyForQuery: the round trip is over; the next one, or the transaction's end.
 * 0: the user reads on; 1: it has moved on (the transaction ended, or its logon did). */
static int pg_ready(Loop *L, user_t *u) {
    pguser_t *g = pg_user(L, u);
    double now = mono();
    switch (g->phase) {
    case PH_STARTUP:
        if (g->opening) { /* open(): logged on before the run; the run sends the transactions */
            g->opening = 0;
            u->state = U_IDLE;
            L->opening_left--;
            return 1;
        }
        pg_first(L, u);
        return 0;
    case PH_BEGIN:
        if (g->failed) {
            finish(L, u, 0, E_SERVER, 0);
            return 1;
        }
        pg_statement(L, u);
        return 0;
    case PH_STATEMENT: {
        const pgtx_t *tx = pg_tx(L, u);
        if (g->failed) {
            if (tx->n_steps > 1) { /* out of the failed block: the connection is reused */
                pg_send_query(L, u, PH_ROLLBACK, "ROLLBACK");
                return 0;
            }
            finish(L, u, 0, E_SERVER, 0);
            return 1;
        }
        if (g->step == 0)
            u->first = now; /* the first statement's result (postgres.py's first_response) */
        if (++g->step < tx->n_steps) {
            pg_statement(L, u);
            return 0;
        }
        if (tx->n_steps > 1) {
            g->commit_sent = mono();
            pg_send_query(L, u, PH_COMMIT, "COMMIT");
            return 0;
        }
        finish(L, u, 1, E_NONE, 0);
        return 1;
    }
    case PH_COMMIT:
        if (g->failed) {
            finish(L, u, 0, E_SERVER, 0);
            return 1;
        }
        __atomic_add_fetch(&L->commits, 1, __ATOMIC_RELAXED); /* CommitCounts.committed, rounded alike */
        __atomic_add_fetch(&L->commit_us, (int64_t)llround((now - g->commit_sent) * 1e6), __ATOMIC_RELAXED);
        finish(L, u, 1, E_NONE, 0);
        return 1;
    default: /* PH_ROLLBACK, after a statement's error: the row keeps that error */
        if (g->failed > 1)
            close_conn(L, u); /* the ROLLBACK failed too: the connection is not reused */
        finish(L, u, 0, E_SERVER, 0);
        return 1;
    }
}

/* One backend message. 0: read on; 1: the user moved on; -1: the transaction failed (recorded). */
static int pg_message(Loop *L, user_t *u, char type, const char *body, size_t n) {
    pguser_t *g = pg_user(L, u);
    switch (type) {
    case 'Z':
        return pg_ready(L, u);
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
        u->body_len = 0;
        if (grow(&u->body, &u->body_cap, n + 1) == 0) {
            memcpy(u->body, body, n);
            u->body_len = n;
        }
        if (g->phase == PH_STARTUP) { /* refused at logon (FATAL): the server closes the connection */
            close_conn(L, u);
            finish(L, u, 0, E_SERVER, 0);
            return -1;
        }
        return 0;
    case 'R': /* Authentication: 0 is AuthenticationOk; any other asks for what the loop does not speak */
        if (n < 4) {
            finish(L, u, 0, E_MALFORMED, M_PG_MESSAGE);
            return -1;
        }
        if (get_be32(body) != 0) {
            finish(L, u, 0, E_AUTH, (int)get_be32(body));
            return -1;
        }
        return 0;
    default: /* rows, command tags, BindComplete, notices, parameter statuses, the backend's key */
        return 0;
    }
}

/* Received bytes: every whole message handled, a part of one kept for the next read. Parsed
 * where they landed when nothing is kept (the usual case: one read holds the round trip's reply). */
static int feed_pg(Loop *L, user_t *u, const char *p, size_t n) {
    const char *buf = p;
    size_t len = n;
    if (u->in_len) {
        if (grow(&u->in, &u->in_cap, u->in_len + n) < 0) {
            finish(L, u, 0, E_MALFORMED, M_HEAD_TOO_LARGE);
            return -1;
        }
        memcpy(u->in + u->in_len, p, n);
        u->in_len += n;
        buf = u->in;
        len = u->in_len;
    }
    size_t pos = 0;
    for (;;) {
        int64_t m = pg_message_len(buf + pos, len - pos);
        if (m < 0) {
            u->in_len = 0;
            finish(L, u, 0, E_MALFORMED, M_PG_MESSAGE);
            return -1;
        }
        if (m == 0)
            break;
        const char *msg = buf + pos;
        pos += (size_t)m;
        int r = pg_message(L, u, msg[0], msg + 5, (size_t)m - 5);
        if (r < 0) {
            u->in_len = 0;
            return -1;
        }
        if (r == 0 && (u->fd < 0 || (u->state != U_READING && u->state != U_SENDING))) {
            u->in_len = 0; /* the next round trip's send failed: recorded, the user moved on */
            return -1;
        }
        if (r > 0) {
            u->in_len = 0;
            if (pos < len) /* bytes after the last ReadyForQuery answer nothing sent: the connection is dropped */
                close_conn(L, u);
            return 1;
        }
    }
    size_t rest = len - pos;
    if (rest && buf != u->in) {
        if (grow(&u->in, &u->in_cap, rest) < 0) {
            finish(L, u, 0, E_MALFORMED, M_HEAD_TOO_LARGE);
            return -1;
        }
        memcpy(u->in, buf + pos, rest);
    } else if (rest && pos)
        memmove(u->in, u->in + pos, rest);
    u->in_len = rest;
    return 0;
}

/* open(): a user's logon failed; the first failure is what open() reports. */
static void open_failed(Loop *L, user_t *u, int err, int detail) {
    pguser_t *g = pg_user(L, u);
    close_conn(L, u);
    g->opening = 0;
    u->state = U_DONE;
    L->opening_left--;
    if (L->open_err)
        return;
    L->open_err = err;
    L->open_detail = detail;
    if (err == E_SERVER && u->body_len && (L->open_msg = malloc(u->body_len)) != NULL) {
        memcpy(L->open_msg, u->body, u->body_len);
        L->open_msg_len = u->body_len;
    }
}

static void on_readable(Loop *L, user_t *u, double now) {
    for (;;) {
        ssize_t n = recv(u->fd, L->recv_buf, sizeof L->recv_buf, 0);
        if (n > 0) {
            if (u->state != U_READING) { /* bytes answering no request: the connection is dropped */
                int sending = u->state == U_SENDING;
                close_conn(L, u);
                if (sending) /* an answer before the request was whole (a refusal): no response to it */
                    finish(L, u, 0, E_CLOSED, 0);
                return;
            }
            if (u->got == 0 && !L->pg)
                u->first = mono(); /* the response's first bytes (the lean client's data_received) */
            u->got += (size_t)n;
            int r = feed(L, u, L->recv_buf, (size_t)n);
            if (r != 0)
                return;
            if ((size_t)n < sizeof L->recv_buf)
                return; /* level-triggered: more, if any, is another event */
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        int e = n < 0 ? errno : 0;
        if (u->state != U_READING) { /* an idle connection the server closed: made anew when needed */
            int sending = u->state == U_SENDING;
            close_conn(L, u);
            if (sending)
                finish(L, u, 0, e ? E_IO_OS : E_CLOSED, e);
            return;
        }
        if (e == 0 && u->head_done && u->body_mode == B_CLOSE) { /* a body read until the close */
            u->keepalive = 0;
            response_done(L, u, 0);
            return;
        }
        if (L->pg && pg_user(L, u)->failed) { /* PostgreSQL said why before it closed (a FATAL error): its words */
            close_conn(L, u);
            finish(L, u, 0, E_SERVER_CLOSED, 0);
            return;
        }
        if ((e == 0 || e == ECONNRESET) && retry_closed(L, u, now))
            return;
        if ((e == 0 || e == ECONNRESET) && u->reused && u->got == 0)
            finish(L, u, 0, E_KEEPALIVE, 0);
        else if (e == 0)
            finish(L, u, 0, E_CLOSED, 0);
        else
            finish(L, u, 0, E_IO_OS, e);
        return;
    }
}

static void on_event(Loop *L, user_t *u, uint32_t events, double now) {
    if (u->state == U_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(u->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            err = errno;
        if (err == 0 && !(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return;
        if (err != 0 || (events & (EPOLLERR | EPOLLHUP))) {
            if (err == 0)
                err = ECONNREFUSED;
            close_conn(L, u);
            finish(L, u, 0, E_CONNECT_OS, err);
            return;
        }
        __atomic_add_fetch(&L->connects, 1, __ATOMIC_RELAXED);
        watch(L, u, EPOLLIN, EPOLL_CTL_MOD);
        u->state = U_IDLE; /* not U_SENDING: send_request starts the request afresh */
        connected(L, u, now);
        return;
    }
    if (u->state == U_SENDING && (events & EPOLLOUT)) {
        if (L->pg)
            pg_flush(L, u);
        else
            send_request(L, u, now);
        if (u->state != U_READING)
            return;
    }
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
        on_readable(L, u, now);
}

/* Connections and responses past their time (the Python path's Deadlines sweep). */
static void sweep(Loop *L, double now) {
    for (int i = 0; i < L->n_users; i++) {
        user_t *u = &L->users[i];
        if ((u->state == U_CONNECTING || u->state == U_SENDING || u->state == U_READING) && now >= u->deadline) {
            int err = u->state == U_CONNECTING ? E_CONNECT_TIMEOUT : E_RESPONSE_TIMEOUT;
            close_conn(L, u);
            finish(L, u, 0, err, 0);
        }
    }
}

/* The run was cut short: the parked users wake no more (their thinks recorded as pending). */
static void cut_parked(Loop *L) {
    while (L->heap_len) {
        park_t p = heap_pop(L);
        user_t *u = &L->users[p.index];
        if (u->step >= 0 && !u->partial)
            emit_pending(L, u);
        u->state = U_DONE;
    }
    arm_timer(L);
}

static void give_up_all(Loop *L) {
    double now = mono();
    for (int i = 0; i < L->n_users; i++) {
        user_t *u = &L->users[i];
        if (u->state == U_CONNECTING || u->state == U_SENDING || u->state == U_READING) {
            close_conn(L, u);
            emit_row(L, u, now, 0, E_GIVEN_UP, 0);
            u->state = U_DONE;
        }
    }
}

#define MAX_EVENTS 256

/* epoll_wait; an interrupted wait is a wait with no events. -1: the loop's own failure (errno kept). */
static int wait_events(Loop *L, struct epoll_event *evs, int wait_ms) {
    int n = epoll_wait(L->epfd, evs, MAX_EVENTS, wait_ms);
    if (n < 0 && errno == EINTR)
        return 0;
    if (n < 0)
        L->error_no = errno;
    return n;
}

/* The eventfd's count read: Python poked (cut short, give up), which the loop reads at its top. */
static void take_poke(Loop *L) {
    uint64_t v;
    if (read(L->efd, &v, sizeof v) < 0) { /* EAGAIN: already read */
    }
}

static int loop_run(Loop *L) {
    struct epoll_event evs[MAX_EVENTS];
    double sweep_every = L->timeout / 10.0;
    if (sweep_every < 0.01)
        sweep_every = 0.01;
    if (sweep_every > 0.25)
        sweep_every = 0.25;
    double now = mono(), next_sweep = now + sweep_every;
    int cut_done = 0;
    for (int i = 0; i < L->n_users; i++) {
        user_t *u = &L->users[i];
        if (!stopped_for(L, u->prev_end)) {
            u->state = U_PARKED;
            heap_push(L, u->prev_end, i);
        } else
            u->state = U_DONE;
    }
    for (;;) {
        if (__atomic_load_n(&L->give_up, __ATOMIC_ACQUIRE)) {
            give_up_all(L);
            break;
        }
        if (__atomic_load_n(&L->cut, __ATOMIC_ACQUIRE) && !cut_done) {
            cut_parked(L);
            cut_done = 1;
        }
        /* the users made ready by the last turn (a user failing at once on every turn waits its turn) */
        int32_t *swap = L->ready;
        L->ready = L->ready_next;
        L->ready_next = swap;
        L->ready_len = L->ready_next_len;
        L->ready_next_len = 0;
        now = mono();
        for (int i = 0; i < L->ready_len; i++) {
            user_t *u = &L->users[L->ready[i]];
            if (u->state == U_IDLE)
                start_transaction(L, u, now);
        }
        int64_t busy = __atomic_load_n(&L->in_flight, __ATOMIC_RELAXED);
        if (L->heap_len == 0 && busy == 0 && L->ready_next_len == 0)
            break; /* everyone has stopped */
        arm_timer(L);
        int wait_ms = L->ready_next_len ? 0 : busy ? (int)(sweep_every * 1000) + 1 : -1;
        int n = wait_events(L, evs, wait_ms);
        if (n < 0)
            return -1;
        now = mono();
        for (int i = 0; i < n; i++) {
            uint64_t tag = evs[i].data.u64;
            if (tag == 0) { /* the timer: the parked users now due */
                uint64_t expirations;
                if (read(L->tfd, &expirations, sizeof expirations) < 0) { /* EAGAIN: already read */
                }
                L->timer_at = -1.0;
                while (L->heap_len && L->heap[0].when <= now) {
                    user_t *u = &L->users[heap_pop(L).index];
                    if (u->step < 0)
                        logon(L, u, now);
                    else {
                        u->state = U_IDLE;
                        start_transaction(L, u, now);
                    }
                }
            } else if (tag == 1) { /* Python asks: cut short or give up (read at the loop's top) */
                take_poke(L);
            } else {
                user_t *u = &L->users[tag - 3];
                if (u->fd >= 0)
                    on_event(L, u, evs[i].events, now);
            }
        }
        if (now >= next_sweep) {
            sweep(L, now);
            next_sweep = now + sweep_every;
        }
    }
    return 0;
}

/* open(): every PostgreSQL user connected and logged on before the run, at once (postgres.py's
 * open: connection set-up is not a transaction); stops at the first failure, or at `timeout`. */
static int loop_open(Loop *L, double timeout) {
    struct epoll_event evs[MAX_EVENTS];
    double now = mono(), until = now + timeout;
    L->opening_left = L->n_users;
    for (int i = 0; i < L->n_users && !L->open_err; i++) {
        user_t *u = &L->users[i];
        L->pgu[i].opening = 1;
        u->deadline = until;
        connect_user(L, u, now);
    }
    while (L->opening_left > 0 && !L->open_err && !__atomic_load_n(&L->cut, __ATOMIC_ACQUIRE)) {
        now = mono();
        if (now >= until) {
            L->open_err = E_CONNECT_TIMEOUT;
            break;
        }
        int n = wait_events(L, evs, (int)((until - now) * 1000) + 1);
        if (n < 0)
            return -1;
        now = mono();
        for (int i = 0; i < n; i++) {
            uint64_t tag = evs[i].data.u64;
            if (tag == 1) { /* a cut (read at the loop's top) */
                take_poke(L);
            } else if (tag >= 3) {
                user_t *u = &L->users[tag - 3];
                if (u->fd >= 0 && L->pgu[tag - 3].opening)
                    on_event(L, u, evs[i].events, now);
            }
        }
    }
    for (int i = 0; i < L->n_users; i++) /* not logged on (a failure, the time, a cut): dropped */
        if (L->pgu[i].opening) {
            L->pgu[i].opening = 0;
            close_conn(L, &L->users[i]);
            L->users[i].state = U_IDLE;
        }
    return 0;
}

/* ---- Python's side ------------------------------------------------------------------------ */

/* free() and forget: the Loop may be freed again (a failed __init__, then dealloc). */
#define DROP(p) do { free(p); (p) = NULL; } while (0)

static void loop_free_config(Loop *L) {
    for (int i = 0; L->txs != NULL && i < L->n_txs; i++) {
        DROP(L->txs[i].wire);
        DROP(L->txs[i].ok_status);
        DROP(L->txs[i].expect);
    }
    for (int i = 0; L->users != NULL && i < L->n_users; i++) {
        if (L->users[i].fd >= 0 && L->pg) /* Terminate: a PostgreSQL session ends without a complaint in the server's log */
            (void)!send(L->users[i].fd, "X\0\0\0\4", 5, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (L->users[i].fd >= 0)
            close(L->users[i].fd);
        DROP(L->users[i].in);
        DROP(L->users[i].line);
        DROP(L->users[i].body);
    }
    DROP(L->txs);
    DROP(L->thinks);
    DROP(L->steps);
    DROP(L->scripts);
    DROP(L->mix);
    DROP(L->cumulative);
    DROP(L->users);
    DROP(L->heap);
    DROP(L->ready);
    DROP(L->ready_next);
    DROP(L->rows);
    DROP(L->pending);
    for (int i = 0; L->pg_txs != NULL && i < L->n_txs; i++) {
        pgtx_t *t = &L->pg_txs[i];
        for (int k = 0; t->steps != NULL && k < t->n_steps; k++)
            DROP(t->steps[k].args);
        for (int k = 0; t->params != NULL && k < t->n_params; k++) {
            pgparam_t *q = &t->params[k];
            for (int v = 0; q->values != NULL && v < q->n_values; v++)
                DROP(q->values[v]);
            DROP(q->values);
            DROP(q->lens);
            DROP(q->cumulative);
        }
        DROP(t->steps);
        DROP(t->params);
    }
    DROP(L->pg_txs);
    for (int i = 0; L->pg_sql != NULL && i < L->n_pg_sql; i++) {
        DROP(L->pg_sql[i]);
        DROP(L->pg_names[i]);
    }
    DROP(L->pg_sql);
    DROP(L->pg_names);
    for (int i = 0; L->pgu != NULL && i < L->n_users; i++) {
        pguser_t *g = &L->pgu[i];
        DROP(g->out.p);
        DROP(g->prepared);
        DROP(g->vals);
        DROP(g->val_off);
        DROP(g->val_len);
    }
    DROP(L->pgu);
    DROP(L->pg_startup);
    DROP(L->errs);
    DROP(L->open_msg);
}

static void Loop_dealloc(Loop *L) {
    loop_free_config(L);
    if (L->epfd >= 0)
        close(L->epfd);
    if (L->tfd >= 0)
        close(L->tfd);
    if (L->efd >= 0)
        close(L->efd);
    pthread_mutex_destroy(&L->lock);
    Py_TYPE(L)->tp_free((PyObject *)L);
}

static PyObject *Loop_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    Loop *L = (Loop *)type->tp_alloc(type, 0);
    if (L == NULL)
        return NULL;
    L->epfd = L->tfd = L->efd = -1;
    L->init = -1;
    pthread_mutex_init(&L->lock, NULL);
    return (PyObject *)L;
}

static char *copy_bytes(PyObject *b, size_t *len) {
    char *data;
    Py_ssize_t n;
    if (PyBytes_AsStringAndSize(b, &data, &n) < 0)
        return NULL;
    char *out = malloc(n ? (size_t)n : 1);
    if (out == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(out, data, (size_t)n);
    *len = (size_t)n;
    return out;
}

/* bytes -> a C string of them; a NUL inside is refused (SQL and names travel as C strings). */
static char *copy_cstr(PyObject *b) {
    size_t n;
    char *out = copy_bytes(b, &n);
    if (out == NULL)
        return NULL;
    char *text = realloc(out, n + 1);
    if (text == NULL) {
        free(out);
        PyErr_NoMemory();
        return NULL;
    }
    text[n] = '\0';
    if (strlen(text) != n) {
        free(text);
        PyErr_SetString(PyExc_ValueError, "a statement holds a NUL byte");
        return NULL;
    }
    return text;
}

/* pg = (startup: bytes, sql: [bytes], txs: [(steps, params, deadline)]) with
 * steps: [(statement, (parameter, ...))], params: [(kind, a, b, (value: bytes, ...), (cumulative, ...))]
 * (native_pg.py's PgSpec). The HTTP txs are then []: a transaction is its statements. */
static int parse_pg(Loop *L, PyObject *pg) {
    PyObject *startup, *sqls, *txs;
    if (!PyArg_ParseTuple(pg, "O!O!O!", &PyBytes_Type, &startup, &PyList_Type, &sqls, &PyList_Type, &txs))
        return -1;
    L->pg = 1;
    if ((L->pg_startup = copy_bytes(startup, &L->pg_startup_len)) == NULL)
        return -1;
    L->n_pg_sql = (int)PyList_GET_SIZE(sqls);
    L->pg_sql = calloc((size_t)L->n_pg_sql + 1, sizeof(char *));
    L->pg_names = calloc((size_t)L->n_pg_sql + 1, sizeof(char *));
    if (L->pg_sql == NULL || L->pg_names == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < L->n_pg_sql; i++) {
        PyObject *sql = PyList_GET_ITEM(sqls, i);
        if (!PyBytes_Check(sql)) {
            PyErr_SetString(PyExc_TypeError, "a statement is bytes");
            return -1;
        }
        if ((L->pg_sql[i] = copy_cstr(sql)) == NULL || (L->pg_names[i] = malloc(24)) == NULL)
            return PyErr_Occurred() ? -1 : (PyErr_NoMemory(), -1);
        snprintf(L->pg_names[i], 24, "perflab_%d", i);
    }
    L->n_txs = (int)PyList_GET_SIZE(txs);
    L->txs = calloc((size_t)L->n_txs + 1, sizeof(txspec_t)); /* unused by PostgreSQL users, indexed alike */
    L->pg_txs = calloc((size_t)L->n_txs + 1, sizeof(pgtx_t));
    if (L->txs == NULL || L->pg_txs == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < L->n_txs; i++) {
        PyObject *steps, *params;
        pgtx_t *t = &L->pg_txs[i];
        if (!PyArg_ParseTuple(PyList_GET_ITEM(txs, i), "O!O!d", &PyList_Type, &steps, &PyList_Type, &params,
                              &t->deadline))
            return -1;
        t->n_params = (int)PyList_GET_SIZE(params);
        t->params = calloc((size_t)t->n_params + 1, sizeof(pgparam_t));
        if (t->params == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (int k = 0; k < t->n_params; k++) {
            pgparam_t *q = &t->params[k];
            long long a, b;
            PyObject *values, *cumulative;
            if (!PyArg_ParseTuple(PyList_GET_ITEM(params, k), "iLLO!O!", &q->kind, &a, &b, &PyTuple_Type, &values,
                                  &PyTuple_Type, &cumulative))
                return -1;
            q->a = a;
            q->b = b;
            q->n_values = (int)PyTuple_GET_SIZE(values);
            int needs_values = q->kind == P_CHOICE || q->kind == P_WEIGHTED || q->kind == P_CONSTANT;
            if (q->kind < P_RANDOM_INT || q->kind > P_CONSTANT || (needs_values && q->n_values < 1) ||
                (q->kind == P_WEIGHTED && PyTuple_GET_SIZE(cumulative) != q->n_values) ||
                (q->kind == P_RANDOM_INT && (b < a || (double)(b - a) >= 9007199254740992.0))) {
                PyErr_SetString(PyExc_ValueError, "a parameter's kind, range, values or weights out of order");
                return -1;
            }
            q->values = calloc((size_t)q->n_values + 1, sizeof(char *));
            q->lens = calloc((size_t)q->n_values + 1, sizeof(uint32_t));
            q->cumulative = calloc((size_t)q->n_values + 1, sizeof(double));
            if (q->values == NULL || q->lens == NULL || q->cumulative == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            for (int v = 0; v < q->n_values; v++) {
                PyObject *value = PyTuple_GET_ITEM(values, v);
                size_t n;
                if (!PyBytes_Check(value)) {
                    PyErr_SetString(PyExc_TypeError, "a parameter's value is bytes");
                    return -1;
                }
                if ((q->values[v] = copy_bytes(value, &n)) == NULL)
                    return -1;
                q->lens[v] = (uint32_t)n;
                if (q->kind == P_WEIGHTED) {
                    q->cumulative[v] = PyFloat_AsDouble(PyTuple_GET_ITEM(cumulative, v));
                    if (PyErr_Occurred())
                        return -1;
                }
            }
        }
        t->n_steps = (int)PyList_GET_SIZE(steps);
        if (t->n_steps < 1 || t->n_steps > 32767) {
            PyErr_SetString(PyExc_ValueError, "a transaction has 1 to 32767 statements");
            return -1;
        }
        t->steps = calloc((size_t)t->n_steps, sizeof(pgstep_t));
        if (t->steps == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (int k = 0; k < t->n_steps; k++) {
            pgstep_t *st = &t->steps[k];
            PyObject *args;
            if (!PyArg_ParseTuple(PyList_GET_ITEM(steps, k), "iO!", &st->stmt, &PyTuple_Type, &args))
                return -1;
            if (st->stmt < 0 || st->stmt >= L->n_pg_sql || PyTuple_GET_SIZE(args) > 65535) {
                PyErr_SetString(PyExc_ValueError, "a step's statement or parameters out of range");
                return -1;
            }
            st->n_args = (int)PyTuple_GET_SIZE(args);
            st->args = calloc((size_t)st->n_args + 1, sizeof(int32_t));
            if (st->args == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            for (int j = 0; j < st->n_args; j++) {
                long arg = PyLong_AsLong(PyTuple_GET_ITEM(args, j));
                if (arg == -1 && PyErr_Occurred())
                    return -1;
                if (arg < 0 || arg >= t->n_params) {
                    PyErr_SetString(PyExc_ValueError, "a statement's parameter is not one of its transaction's");
                    return -1;
                }
                st->args[j] = (int32_t)arg;
            }
        }
    }
    return 0;
}

/* Loop(family, address, port, timeout, txs, thinks, scripts, mix, cumulative, init,
 *      users, first_user, all_users, seed, t0, stagger, stop_at, residual_start[, pg])
 * txs: [(wire: bytes, idempotent: bool, head: bool, statuses: tuple[int], expect: bytes | None)]
 * thinks: [(kind, a, b, c)]; scripts: [[(tx, klass, think), ...]]; mix: [script]; cumulative: [float]
 * (native_http.py builds them from the compiled workload); pg: PostgreSQL users (parse_pg). */
static int Loop_init(Loop *L, PyObject *args, PyObject *kwds) {
    int family, port, init, residual_start;
    const char *address;
    double timeout, t0, stagger, stop_at;
    PyObject *txs, *thinks, *scripts, *mix, *cumulative, *pg = Py_None;
    long long users, first_user, all_users;
    unsigned long long seed;
    if (L->users != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "a Loop is made once");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "isidO!O!O!O!O!iLLLKdddp|O", &family, &address, &port, &timeout, &PyList_Type, &txs,
                          &PyList_Type, &thinks, &PyList_Type, &scripts, &PyList_Type, &mix, &PyList_Type,
                          &cumulative, &init, &users, &first_user, &all_users, &seed, &t0, &stagger, &stop_at,
                          &residual_start, &pg))
        return -1;
    if (pg != Py_None && PyList_GET_SIZE(txs) != 0) {
        PyErr_SetString(PyExc_ValueError, "PostgreSQL users take their transactions from pg, not txs");
        return -1;
    }
    if (users < 0 || users > 100000000 || PyList_GET_SIZE(mix) < 1 || PyList_GET_SIZE(mix) != PyList_GET_SIZE(cumulative)) {
        PyErr_SetString(PyExc_ValueError, "users, mix or cumulative out of range");
        return -1;
    }
    memset(&L->addr, 0, sizeof L->addr);
    if (family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&L->addr;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)port);
        if (inet_pton(AF_INET, address, &a->sin_addr) != 1)
            goto bad_address;
        L->addr_len = sizeof *a;
    } else if (family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&L->addr;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, address, &a->sin6_addr) != 1)
            goto bad_address;
        L->addr_len = sizeof *a;
    } else
        goto bad_address;
    L->family = family;
    L->timeout = timeout;
    L->t0 = t0;
    L->stagger = stagger;
    L->stop_at = stop_at;
    L->residual_start = residual_start;
    L->seed = (uint64_t)seed;
    L->first_user = first_user;
    L->all_users = all_users;
    L->init = init;

    if (pg != Py_None) {
        if (parse_pg(L, pg) < 0)
            goto fail;
    } else {
        L->n_txs = (int)PyList_GET_SIZE(txs);
        L->txs = calloc((size_t)L->n_txs + 1, sizeof(txspec_t));
    }
    for (int i = 0; L->pg == 0 && i < L->n_txs; i++) {
        PyObject *wire, *statuses, *expect;
        int idempotent, head;
        Py_ssize_t reply_len = -1; /* given (>= 0): a raw exchange, not HTTP */
        if (!PyArg_ParseTuple(PyList_GET_ITEM(txs, i), "O!ppO!O|n", &PyBytes_Type, &wire, &idempotent, &head,
                              &PyTuple_Type, &statuses, &expect, &reply_len))
            goto fail;
        txspec_t *t = &L->txs[i];
        if (reply_len >= 0) {
            if (reply_len == 0 || reply_len > MAX_HEAD) {
                PyErr_SetString(PyExc_ValueError, "a raw exchange reads 1 byte to 1 MiB back");
                goto fail;
            }
            t->raw = 1;
            t->reply_len = (size_t)reply_len;
        }
        if ((t->wire = copy_bytes(wire, &t->wire_len)) == NULL)
            goto fail;
        t->idempotent = idempotent;
        t->head = head;
        if (PyTuple_GET_SIZE(statuses) > 0) {
            t->ok_status = calloc(1000, 1);
            for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(statuses); k++) {
                long s = PyLong_AsLong(PyTuple_GET_ITEM(statuses, k));
                if (s == -1 && PyErr_Occurred())
                    goto fail;
                if (s >= 0 && s < 1000)
                    t->ok_status[s] = 1;
            }
        }
        if (expect != Py_None) {
            if (!PyBytes_Check(expect)) {
                PyErr_SetString(PyExc_TypeError, "expect: bytes or None");
                goto fail;
            }
            if ((t->expect = copy_bytes(expect, &t->expect_len)) == NULL)
                goto fail;
        }
    }
    L->n_thinks = (int)PyList_GET_SIZE(thinks);
    L->thinks = calloc((size_t)L->n_thinks + 1, sizeof(think_t));
    for (int i = 0; i < L->n_thinks; i++) {
        think_t *t = &L->thinks[i];
        if (!PyArg_ParseTuple(PyList_GET_ITEM(thinks, i), "iddd", &t->kind, &t->a, &t->b, &t->c))
            goto fail;
    }
    L->n_scripts = (int)PyList_GET_SIZE(scripts);
    L->scripts = calloc((size_t)L->n_scripts + 1, sizeof(script_t));
    int total = 0;
    for (int i = 0; i < L->n_scripts; i++) {
        PyObject *s = PyList_GET_ITEM(scripts, i);
        if (!PyList_Check(s) || PyList_GET_SIZE(s) < 1) {
            PyErr_SetString(PyExc_ValueError, "a script is a non-empty list of steps");
            goto fail;
        }
        total += (int)PyList_GET_SIZE(s);
    }
    L->steps = calloc((size_t)total + 1, sizeof(step_t));
    L->n_steps = total;
    int k = 0;
    for (int i = 0; i < L->n_scripts; i++) {
        PyObject *s = PyList_GET_ITEM(scripts, i);
        L->scripts[i].first = k;
        L->scripts[i].count = (int32_t)PyList_GET_SIZE(s);
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(s); j++, k++) {
            int tx, klass, think;
            if (!PyArg_ParseTuple(PyList_GET_ITEM(s, j), "iii", &tx, &klass, &think))
                goto fail;
            if (tx < 0 || tx >= L->n_txs || think < 0 || think >= L->n_thinks) {
                PyErr_SetString(PyExc_ValueError, "a step's transaction or think out of range");
                goto fail;
            }
            L->steps[k].tx = tx;
            L->steps[k].klass = (int16_t)klass;
            L->steps[k].think = think;
        }
    }
    L->n_mix = (int)PyList_GET_SIZE(mix);
    L->mix = calloc((size_t)L->n_mix, sizeof(int32_t));
    L->cumulative = calloc((size_t)L->n_mix, sizeof(double));
    for (int i = 0; i < L->n_mix; i++) {
        long m = PyLong_AsLong(PyList_GET_ITEM(mix, i));
        double c = PyFloat_AsDouble(PyList_GET_ITEM(cumulative, i));
        if (PyErr_Occurred())
            goto fail;
        if (m < 0 || m >= L->n_scripts) {
            PyErr_SetString(PyExc_ValueError, "a mix entry names no script");
            goto fail;
        }
        L->mix[i] = (int32_t)m;
        L->cumulative[i] = c;
    }
    if (init >= L->n_scripts) {
        PyErr_SetString(PyExc_ValueError, "init names no script");
        goto fail;
    }
    L->n_users = (int)users;
    L->users = calloc((size_t)users + 1, sizeof(user_t));
    L->heap = calloc((size_t)users + 1, sizeof(park_t));
    L->ready = calloc((size_t)users + 1, sizeof(int32_t));
    L->ready_next = calloc((size_t)users + 1, sizeof(int32_t));
    if (L->users == NULL || L->heap == NULL || L->ready == NULL || L->ready_next == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (int i = 0; i < L->n_users; i++) {
        user_t *u = &L->users[i];
        int64_t uid = first_user + i;
        u->uid = (int32_t)uid;
        u->fd = -1;
        u->rng = rng_init(L->seed, (uint64_t)uid, 0);
        u->step = -1;
        u->prev_end = t0 + stagger * (double)uid / (double)(all_users > 1 ? all_users : 1);
    }
    if (L->pg) {
        int max_params = 1;
        for (int i = 0; i < L->n_txs; i++)
            if (L->pg_txs[i].n_params > max_params)
                max_params = L->pg_txs[i].n_params;
        if ((L->pgu = calloc((size_t)users + 1, sizeof(pguser_t))) == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
        for (int i = 0; i < L->n_users; i++) {
            pguser_t *g = &L->pgu[i];
            g->prng = rng_init(L->seed, (uint64_t)L->users[i].uid, 1);
            g->prepared = calloc(((size_t)L->n_pg_sql + 7) / 8 + 1, 1);
            g->val_off = calloc((size_t)max_params, sizeof(uint32_t));
            g->val_len = calloc((size_t)max_params, sizeof(uint32_t));
            if (g->prepared == NULL || g->val_off == NULL || g->val_len == NULL) {
                PyErr_NoMemory();
                goto fail;
            }
        }
    }
    L->epfd = epoll_create1(EPOLL_CLOEXEC);
    L->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    L->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (L->epfd < 0 || L->tfd < 0 || L->efd < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        goto fail;
    }
    struct epoll_event ev;
    ev.events = EPOLLIN;
    ev.data.u64 = 0;
    epoll_ctl(L->epfd, EPOLL_CTL_ADD, L->tfd, &ev);
    ev.data.u64 = 1;
    epoll_ctl(L->epfd, EPOLL_CTL_ADD, L->efd, &ev);
    L->timer_at = -1.0;
    return 0;
bad_address:
    PyErr_Format(PyExc_ValueError, "not a numeric address of family %d: %s", family, address);
    return -1;
fail:
    loop_free_config(L);
    return -1;
}

static PyObject *Loop_run(Loop *L, PyObject *unused) {
    if (L->users == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the Loop was not made");
        return NULL;
    }
    if (L->running || L->finished) {
        PyErr_SetString(PyExc_RuntimeError, "a Loop runs once");
        return NULL;
    }
    L->running = 1;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = loop_run(L);
    Py_END_ALLOW_THREADS
    L->running = 0;
    L->finished = 1;
    if (rc < 0) {
        errno = L->error_no;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    Py_RETURN_NONE;
}

/* open(timeout) -> None, or (error kind, detail, the server's ErrorResponse fields): the
 * PostgreSQL users logged on before the run (loop_open), the GIL released. */
static PyObject *Loop_open(Loop *L, PyObject *args) {
    double timeout;
    if (!PyArg_ParseTuple(args, "d", &timeout))
        return NULL;
    if (L->users == NULL || !L->pg || L->running || L->finished) {
        PyErr_SetString(PyExc_RuntimeError, "open() is a PostgreSQL Loop's, once, before run()");
        return NULL;
    }
    L->running = 1;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = loop_open(L, timeout);
    Py_END_ALLOW_THREADS
    L->running = 0;
    if (rc < 0) {
        errno = L->error_no;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    if (!L->open_err)
        Py_RETURN_NONE;
    return Py_BuildValue("(iiy#)", L->open_err, L->open_detail, L->open_msg ? L->open_msg : "",
                         (Py_ssize_t)L->open_msg_len);
}

/* close(): the users' connections closed now (a PostgreSQL session told first), not when the Loop is freed. */
static PyObject *Loop_close(Loop *L, PyObject *unused) {
    if (L->running) {
        PyErr_SetString(PyExc_RuntimeError, "close() while the Loop runs");
        return NULL;
    }
    for (int i = 0; L->users != NULL && i < L->n_users; i++) {
        user_t *u = &L->users[i];
        if (u->fd >= 0 && L->pg)
            (void)!send(u->fd, "X\0\0\0\4", 5, MSG_NOSIGNAL | MSG_DONTWAIT);
        close_conn(L, u);
    }
    Py_RETURN_NONE;
}

static void poke(Loop *L) {
    uint64_t one = 1;
    if (L->efd >= 0 && write(L->efd, &one, sizeof one) < 0) { /* a full counter is a poke already */
    }
}

static PyObject *Loop_cut(Loop *L, PyObject *unused) {
    __atomic_store_n(&L->cut, 1, __ATOMIC_RELEASE);
    poke(L);
    Py_RETURN_NONE;
}

static PyObject *Loop_give_up(Loop *L, PyObject *unused) {
    __atomic_store_n(&L->cut, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&L->give_up, 1, __ATOMIC_RELEASE);
    poke(L);
    Py_RETURN_NONE;
}

/* take() -> (rows: bytes, pending: bytes, connects: int, errors: bytes): what was recorded since
 * the last take, the connections made so far, and the server's words of the rows with E_SERVER
 * (each a native uint32 length and an ErrorResponse's fields; such a row's detail is its offset). */
static PyObject *Loop_take(Loop *L, PyObject *unused) {
    pthread_mutex_lock(&L->lock);
    row_t *rows = L->rows;
    size_t n_rows = L->rows_len;
    pending_t *pending = L->pending;
    size_t n_pending = L->pending_len;
    L->rows = NULL;
    L->rows_len = L->rows_cap = 0;
    L->pending = NULL;
    L->pending_len = L->pending_cap = 0;
    char *errs = L->errs;
    size_t n_errs = L->errs_len;
    L->errs = NULL;
    L->errs_len = L->errs_cap = 0;
    pthread_mutex_unlock(&L->lock);
    PyObject *r = PyBytes_FromStringAndSize((const char *)rows, (Py_ssize_t)(n_rows * sizeof(row_t)));
    PyObject *p = PyBytes_FromStringAndSize((const char *)pending, (Py_ssize_t)(n_pending * sizeof(pending_t)));
    PyObject *e = PyBytes_FromStringAndSize(errs ? errs : "", (Py_ssize_t)n_errs);
    free(rows);
    free(pending);
    free(errs);
    if (r == NULL || p == NULL || e == NULL) {
        Py_XDECREF(r);
        Py_XDECREF(p);
        Py_XDECREF(e);
        return NULL;
    }
    return Py_BuildValue("(NNLN)", r, p, (long long)__atomic_load_n(&L->connects, __ATOMIC_RELAXED), e);
}

static PyObject *Loop_get_in_flight(Loop *L, void *closure) {
    return PyLong_FromLongLong((long long)__atomic_load_n(&L->in_flight, __ATOMIC_RELAXED));
}

static PyObject *Loop_get_connects(Loop *L, void *closure) {
    return PyLong_FromLongLong((long long)__atomic_load_n(&L->connects, __ATOMIC_RELAXED));
}

static PyObject *Loop_get_commits(Loop *L, void *closure) {
    return Py_BuildValue("(LL)", (long long)__atomic_load_n(&L->commits, __ATOMIC_RELAXED),
                         (long long)__atomic_load_n(&L->commit_us, __ATOMIC_RELAXED));
}

static PyMethodDef Loop_methods[] = {
    {"open", (PyCFunction)Loop_open, METH_VARARGS, "PostgreSQL users: log every user on before run() (releases the GIL)."},
    {"close", (PyCFunction)Loop_close, METH_NOARGS, "Close the users' connections."},
    {"run", (PyCFunction)Loop_run, METH_NOARGS, "Run the users until they have all stopped (releases the GIL)."},
    {"cut", (PyCFunction)Loop_cut, METH_NOARGS, "The run is cut short: nobody parked wakes; in-flight ones end."},
    {"give_up", (PyCFunction)Loop_give_up, METH_NOARGS, "Record what is in flight as given up, and return."},
    {"take", (PyCFunction)Loop_take, METH_NOARGS, "(rows, pending thinks, connects, errors) since the last take."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Loop_getset[] = {
    {"in_flight", (getter)Loop_get_in_flight, NULL, "transactions in flight", NULL},
    {"connects", (getter)Loop_get_connects, NULL, "connections made", NULL},
    {"commits", (getter)Loop_get_commits, NULL, "(COMMITs waited for, their round trips in us): PostgreSQL users", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject LoopType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "perflab.drive.load.http_loop.Loop",
    .tp_basicsize = sizeof(Loop),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Closed-loop HTTP users, one keep-alive connection each (see native_http.py).",
    .tp_new = Loop_new,
    .tp_init = (initproc)Loop_init,
    .tp_dealloc = (destructor)Loop_dealloc,
    .tp_methods = Loop_methods,
    .tp_getset = Loop_getset,
};

/* rng_state(seed, stream, substream): UserRandom's initial state, to test the two agree. */
static PyObject *py_rng_state(PyObject *self, PyObject *args) {
    unsigned long long seed, stream, sub;
    if (!PyArg_ParseTuple(args, "KKK", &seed, &stream, &sub))
        return NULL;
    return PyLong_FromUnsignedLongLong(rng_init(seed, stream, sub));
}

/* draw(state, kind, a, b, c, residual, n) -> list of n thinks: the draws, to test them against thinktime.py */
static PyObject *py_draw(PyObject *self, PyObject *args) {
    unsigned long long state;
    think_t t;
    int residual, n;
    if (!PyArg_ParseTuple(args, "Kidddpi", &state, &t.kind, &t.a, &t.b, &t.c, &residual, &n))
        return NULL;
    uint64_t s = state;
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (int i = 0; i < n; i++)
        PyList_SET_ITEM(out, i, PyFloat_FromDouble(residual ? think_residual(&t, &s) : think_sample(&t, &s)));
    return out;
}

static PyMethodDef module_methods[] = {
    {"rng_state", py_rng_state, METH_VARARGS, "UserRandom(seed, stream, substream).state"},
    {"draw", py_draw, METH_VARARGS, "n think draws from a stream state"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "http_loop",
                                    "perflab's closed-loop HTTP users, compiled (drive/load/native_http.py).", -1,
                                    module_methods};

PyMODINIT_FUNC PyInit_http_loop(void) {
    if (PyType_Ready(&LoopType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&LoopType);
    if (PyModule_AddObject(m, "Loop", (PyObject *)&LoopType) < 0) {
        Py_DECREF(&LoopType);
        Py_DECREF(m);
        return NULL;
    }
    PyModule_AddIntConstant(m, "ROW_SIZE", (long)sizeof(row_t));
    PyModule_AddIntConstant(m, "PENDING_SIZE", (long)sizeof(pending_t));
    return m;
}
