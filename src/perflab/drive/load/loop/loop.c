/* The compiled loop's users, connections and time line (loop.h says what it keeps of the Python
 * path). One thread, one epoll; one timerfd armed for the earliest of three things -- a parked
 * user's wake-up, an in-flight transaction's deadline, the next arrival -- each kept in order
 * (two heaps and the arrival schedule), so no turn of the loop scans users that have nothing due.
 */
#include "loop.h"

#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "mem.h"
#include "proto.h"
#include "transport.h"

double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void loop_fail(loop_t *L, int err) {
    if (L->error_no == 0)
        L->error_no = err;
}

void loop_count(loop_t *L, int64_t *counter, int64_t n) {
    (void)L;
    __atomic_add_fetch(counter, n, __ATOMIC_RELAXED);
}

/* ---- output: rows and pending thinks, under the lock -------------------------------------- */

static void *next_slot(void **array, size_t *len, size_t *cap, size_t item, size_t first_cap) {
    if (*len == *cap) {
        size_t grown_cap = *cap ? *cap * 2 : first_cap;
        void *grown = mem_realloc(*array, grown_cap * item);
        if (grown == NULL)
            return NULL;
        *array = grown;
        *cap = grown_cap;
    }
    return (char *)*array + (*len)++ * item;
}

/* A row; NULL when memory ran out (the row lost, counted, and the loop stopping). */
static row_t *new_row(loop_t *L) {
    row_t *r = next_slot((void **)&L->rows, &L->rows_len, &L->rows_cap, sizeof(row_t), 4096);
    if (r == NULL) {
        L->lost++;
        loop_fail(L, ENOMEM);
    }
    return r;
}

static void emit_row(loop_t *L, user_t *u, double end, int ok, int err, int detail, const char *words, size_t n) {
    const step_t *st = user_step(L, u);
    pthread_mutex_lock(&L->lock);
    row_t *r = new_row(L);
    if (r != NULL) {
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
        if (err == E_SERVER || err == E_SERVER_CLOSED || err == E_TLS) { /* the words go with the row */
            uint32_t len = (uint32_t)n;
            if (mem_grow(&L->errs, &L->errs_cap, L->errs_len + 4 + n) < 0) {
                r->detail = -1; /* the words lost (native_http.py says so) */
                loop_fail(L, ENOMEM);
            } else {
                r->detail = (int32_t)L->errs_len;
                memcpy(L->errs + L->errs_len, &len, 4);
                if (n)
                    memcpy(L->errs + L->errs_len + 4, words, n);
                L->errs_len += 4 + n;
            }
        }
    }
    pthread_mutex_unlock(&L->lock);
}

static void emit_pending(loop_t *L, user_t *u) {
    const step_t *st = user_step(L, u);
    pthread_mutex_lock(&L->lock);
    pending_t *p = next_slot((void **)&L->pending, &L->pending_len, &L->pending_cap, sizeof(pending_t), 256);
    if (p == NULL) {
        loop_fail(L, ENOMEM);
    } else {
        p->start = u->prev_end;
        p->think = u->think;
        p->uid = u->uid;
        p->tx = (int16_t)st->tx;
        p->klass = st->klass;
    }
    pthread_mutex_unlock(&L->lock);
}

/* ---- the parked users' heap (wake-up time, then user) ------------------------------------- */

static inline int park_less(const park_t *a, const park_t *b) {
    return a->when < b->when || (a->when == b->when && a->index < b->index);
}

static int park_push(loop_t *L, double when, int32_t index) {
    if (L->park_len == L->park_cap) {
        int cap = L->park_cap ? L->park_cap * 2 : 1024;
        park_t *grown = mem_realloc(L->park, (size_t)cap * sizeof(park_t));
        if (grown == NULL)
            return -1;
        L->park = grown;
        L->park_cap = cap;
    }
    int i = L->park_len++;
    L->park[i].when = when;
    L->park[i].index = index;
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (!park_less(&L->park[i], &L->park[parent]))
            break;
        park_t t = L->park[i];
        L->park[i] = L->park[parent];
        L->park[parent] = t;
        i = parent;
    }
    return 0;
}

static park_t park_pop(loop_t *L) {
    park_t top = L->park[0];
    L->park[0] = L->park[--L->park_len];
    int i = 0, n = L->park_len;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && park_less(&L->park[l], &L->park[m]))
            m = l;
        if (r < n && park_less(&L->park[r], &L->park[m]))
            m = r;
        if (m == i)
            break;
        park_t t = L->park[i];
        L->park[i] = L->park[m];
        L->park[m] = t;
        i = m;
    }
    return top;
}

/* ---- the in-flight users' deadlines: an indexed heap (user.dl_pos) ------------------------- */

static inline double dl_when(loop_t *L, int pos) {
    return user_at(L, L->dl[pos])->deadline;
}

static void dl_place(loop_t *L, int pos, int32_t index) {
    L->dl[pos] = index;
    user_at(L, index)->dl_pos = pos;
}

static void dl_sift(loop_t *L, int pos) {
    int32_t index = L->dl[pos];
    double when = user_at(L, index)->deadline;
    while (pos > 0) { /* up */
        int parent = (pos - 1) / 2;
        if (dl_when(L, parent) <= when)
            break;
        dl_place(L, pos, L->dl[parent]);
        pos = parent;
    }
    for (;;) { /* down */
        int l = 2 * pos + 1, r = l + 1, m = -1;
        double best = when;
        if (l < L->dl_len && dl_when(L, l) < best) {
            m = l;
            best = dl_when(L, l);
        }
        if (r < L->dl_len && dl_when(L, r) < best)
            m = r;
        if (m < 0)
            break;
        dl_place(L, pos, L->dl[m]);
        pos = m;
    }
    dl_place(L, pos, index);
}

void loop_set_deadline(loop_t *L, user_t *u, double when) {
    u->deadline = when;
    if (u->dl_pos < 0) {
        if (L->dl_len == L->dl_cap) {
            int cap = L->dl_cap ? L->dl_cap * 2 : 1024;
            int32_t *grown = mem_realloc(L->dl, (size_t)cap * sizeof(int32_t));
            if (grown == NULL) { /* without its deadline the transaction could hang the run: stop */
                loop_fail(L, ENOMEM);
                return;
            }
            L->dl = grown;
            L->dl_cap = cap;
        }
        u->dl_pos = L->dl_len++;
        L->dl[u->dl_pos] = u->index;
    }
    dl_sift(L, u->dl_pos);
}

static void dl_remove(loop_t *L, user_t *u) {
    int pos = u->dl_pos;
    if (pos < 0)
        return;
    u->dl_pos = -1;
    int32_t last = L->dl[--L->dl_len];
    if (pos < L->dl_len) {
        dl_place(L, pos, last);
        dl_sift(L, pos);
    }
}

/* ---- the timer: the earliest of a wake-up, a deadline, the next arrival ------------------- */

/* A due time put off to the next point of a grid (0: as it is). */
static inline double on_grid(double when, double grid) {
    return grid > 0.0 && when < INFINITY ? ceil(when / grid) * grid : when;
}

static void arm_timer(loop_t *L) {
    /* each on its grid (timing.wake): everything due up to a grid point runs at it, up to a step
     * late -- each wake-up of an idle thread costs about 20 us of its CPU on a KVM guest */
    double when = INFINITY;
    if (L->park_len)
        when = on_grid(L->park[0].when, L->think_grid);
    if (L->dl_len && on_grid(dl_when(L, 0), L->think_grid) < when)
        when = on_grid(dl_when(L, 0), L->think_grid);
    if (L->open_loop && !L->arrivals_over && on_grid(L->next_arrival, L->arrival_grid) < when)
        when = on_grid(L->next_arrival, L->arrival_grid);
    if (when == L->timer_at)
        return;
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    if (when < INFINITY) {
        if (when <= 0.0)
            when = 1e-9;
        its.it_value.tv_sec = (time_t)when;
        its.it_value.tv_nsec = (long)((when - (double)its.it_value.tv_sec) * 1e9);
        if (its.it_value.tv_nsec >= 1000000000L)
            its.it_value.tv_nsec = 999999999L;
        if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
            its.it_value.tv_nsec = 1;
    } /* else all zero: disarmed */
    if (timerfd_settime(L->tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
        loop_fail(L, errno); /* nobody would wake: the run cannot go on */
        return;
    }
    L->timer_at = when;
}

/* ---- the users' life: logon, think, transaction ------------------------------------------ */

static inline int stopped_for(loop_t *L, double intended) {
    return intended >= L->stop_at || __atomic_load_n(&L->cut, __ATOMIC_RELAXED);
}

static void make_ready(loop_t *L, user_t *u) {
    if (u->ready)
        return;
    u->ready = 1;
    u->next_ready = -1;
    if (L->next < 0)
        L->next = u->index;
    else
        user_at(L, L->next_tail)->next_ready = u->index;
    L->next_tail = u->index;
}

/* Open loop: the arrival's script is over, its slot (and its connection) free for the next. */
static void release_slot(loop_t *L, user_t *u) {
    u->state = U_FREE;
    u->next_ready = L->free_slot;
    L->free_slot = u->index;
}

static void stop_user(loop_t *L, user_t *u) {
    if (L->open_loop)
        release_slot(L, u);
    else
        u->state = U_DONE;
}

/* engine.py's _next_think: the think before the user's next transaction; the user is made ready
 * (due now), parked, or stops (its transaction would fall at or after the window's end). An
 * arrival whose script is over frees its slot. */
static void next_think(loop_t *L, user_t *u, double now) {
    const script_t *sc = &L->scripts[u->script];
    if (u->step >= sc->count) {
        if (L->open_loop) {
            release_slot(L, u);
            return;
        }
        do { /* the script is done: the next, drawn from the mix */
            u->script = L->mix[rng_pick(&u->rng, L->cumulative, L->n_mix)];
            sc = &L->scripts[u->script];
            u->step = 0;
            u->partial = 0;
        } while (u->step >= sc->count);
    }
    const step_t *st = user_step(L, u);
    const think_t *t = &L->thinks[st->think];
    double think = u->partial ? think_residual(t, &u->rng) : think_sample(t, &u->rng);
    u->think = think;
    double intended = u->prev_end + think;
    if (stopped_for(L, intended)) {
        if (!u->partial)
            emit_pending(L, u);
        stop_user(L, u);
        return;
    }
    if (intended - now > 0) {
        if (park_push(L, intended, u->index) < 0) {
            loop_fail(L, ENOMEM);
            stop_user(L, u);
            return;
        }
        u->state = U_PARKED;
        return;
    }
    u->state = U_IDLE;
    make_ready(L, u);
}

static void logon(loop_t *L, user_t *u, double now) {
    double at = u->prev_end;
    u->prev_end = L->stagger == 0.0 ? (at > now ? at : now) : at;
    u->step = 0;
    u->partial = (uint8_t)L->residual_start;
    u->script = L->init >= 0 ? L->init : L->mix[rng_pick(&u->rng, L->cumulative, L->n_mix)];
    next_think(L, u, now);
}

static void start_transaction(loop_t *L, user_t *u, double intended, double think_rec) {
    if (stopped_for(L, intended)) { /* engine.py's _active_user: nothing issued */
        stop_user(L, u);
        return;
    }
    u->intended = intended;
    u->think_rec = think_rec;
    u->partial = 0;
    u->actual = mono(); /* when it is issued: a turn's later users are issued later than its start */
    u->first = NAN;
    u->retried = 0;
    u->got = 0;
    __atomic_add_fetch(&L->in_flight, 1, __ATOMIC_RELAXED);
    const txcommon_t *tx = &L->txs[user_step(L, u)->tx];
    if (tx->n_params) {
        if (u->drawn == NULL && (u->drawn = mem_calloc((size_t)L->max_params, sizeof(drawn_t))) == NULL) {
            loop_fail(L, ENOMEM);
            loop_finish(L, u, 0, E_GIVEN_UP, 0);
            return;
        }
        params_draw(tx->params, tx->n_params, &u->prng, u->drawn);
    }
    /* every transaction in flight has a deadline (the protocols move it: HTTP's counts from the send) */
    loop_set_deadline(L, u, u->actual + (tx->deadline > 0 ? tx->deadline : L->timeout));
    if (u->fd < 0)
        loop_connect(L, u);
    else
        L->proto->begin(L, u);
}

/* The closed-loop user's transaction now due (its think over). */
static void start_due(loop_t *L, user_t *u) {
    start_transaction(L, u, u->prev_end + u->think, u->partial ? NAN : u->think);
}

static void open_failed(loop_t *L, user_t *u, int err, int detail, const char *words, size_t n) {
    loop_close_conn(L, u);
    dl_remove(L, u);
    u->opening = 0;
    u->state = U_DONE;
    L->opening_left--;
    if (L->open_err)
        return;
    L->open_err = err;
    L->open_detail = detail;
    if (n && (L->open_msg = mem_alloc(n)) != NULL) {
        memcpy(L->open_msg, words, n);
        L->open_msg_len = n;
    }
}

static void finish_row(loop_t *L, user_t *u, int ok, int err, int detail, const char *words, size_t n) {
    if (u->opening) { /* a logon before the run (open()), not a transaction */
        open_failed(L, u, err, detail, words, n);
        return;
    }
    double end = mono();
    emit_row(L, u, end, ok, err, detail, words, n);
    dl_remove(L, u);
    __atomic_sub_fetch(&L->in_flight, 1, __ATOMIC_RELAXED);
    if (!ok && err != E_STATUS && err != E_BODY && err != E_SERVER)
        loop_close_conn(L, u); /* the connection is not reused after a network error */
    u->prev_end = end;
    u->step++;
    next_think(L, u, end);
}

void loop_finish(loop_t *L, user_t *u, int ok, int err, int detail) {
    finish_row(L, u, ok, err, detail, NULL, 0);
}

void loop_finish_words(loop_t *L, user_t *u, int err, const char *words, size_t n) {
    finish_row(L, u, 0, err, 0, words, n);
}

void loop_logged_on(loop_t *L, user_t *u) {
    u->opening = 0;
    u->state = U_IDLE;
    dl_remove(L, u);
    L->opening_left--;
}

/* ---- connections ------------------------------------------------------------------------- */

static int watch(loop_t *L, user_t *u, uint32_t events, int op) {
    struct epoll_event ev;
    ev.events = events;
    ev.data.u64 = (uint64_t)u->index + 3; /* 0, 1, 2: the timer, the eventfd, unused */
    return epoll_ctl(L->epfd, op, u->fd, &ev);
}

/* The events the user's connection waits for: readable always (an answer, or the server closing
 * an idle connection), writable while a send waits for room or the transport for a record. */
static int rewatch(loop_t *L, user_t *u) {
    uint32_t events = EPOLLIN;
    if (u->state == U_CONNECTING || (u->state == U_SENDING && u->want != 1) || u->want == 2)
        events |= EPOLLOUT;
    return watch(L, u, events, EPOLL_CTL_MOD);
}

void loop_close_conn(loop_t *L, user_t *u) {
    if (u->fd < 0)
        return;
    if (u->tls != NULL)
        L->transport->close(L, u);
    /* closing the descriptor takes it out of the epoll set (it is not shared): no EPOLL_CTL_DEL */
    close(u->fd);
    u->fd = -1;
    u->want = 0;
    L->proto->disconnected(L, u);
}

static void connected_tcp(loop_t *L, user_t *u);

/* From address u->addr on, the first that takes the connection (or is still connecting). */
static void try_connect(loop_t *L, user_t *u) {
    int last = ECONNREFUSED;
    for (; u->addr < L->n_addrs; u->addr++) {
        const struct sockaddr_storage *a = &L->addrs[u->addr];
        int fd = socket(a->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) { /* out of descriptors or memory: no other address would fare better */
            last = errno;
            break;
        }
        int one = 1;
        if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0) { /* as uvloop's TCP transports */
            last = errno;
            close(fd);
            break;
        }
        u->fd = fd;
        int r = connect(fd, (const struct sockaddr *)a, L->addr_lens[u->addr]);
        if (r == 0 || errno == EINPROGRESS) {
            int now_up = r == 0;
            u->state = now_up ? U_IDLE : U_CONNECTING;
            if (watch(L, u, now_up ? EPOLLIN : EPOLLIN | EPOLLOUT, EPOLL_CTL_ADD) < 0) {
                last = errno;
                close(fd);
                u->fd = -1;
                break;
            }
            if (now_up)
                connected_tcp(L, u);
            return;
        }
        last = errno;
        close(fd);
        u->fd = -1;
    }
    u->addr = 0;
    loop_finish(L, u, 0, E_CONNECT_OS, last);
}

void loop_connect(loop_t *L, user_t *u) {
    u->addr = 0;
    u->reused = 0;
    try_connect(L, u);
}

static void handshake(loop_t *L, user_t *u) {
    int err = 0, r = L->transport->handshake(L, u, &err);
    if (r > 0) {
        u->state = U_IDLE;
        u->want = 0;
        if (rewatch(L, u) < 0) {
            int e = errno;
            loop_close_conn(L, u);
            loop_finish(L, u, 0, E_CONNECT_OS, e);
            return;
        }
        L->proto->connected(L, u);
    } else if (r == 0) {
        if (rewatch(L, u) < 0) {
            int e = errno;
            loop_close_conn(L, u);
            loop_finish(L, u, 0, E_CONNECT_OS, e);
        }
    } else if (err >= 0) { /* (err < 0: the transport recorded the transaction with its words) */
        loop_close_conn(L, u);
        loop_finish(L, u, 0, E_CONNECT_OS, err);
    }
}

static void connected_tcp(loop_t *L, user_t *u) {
    __atomic_add_fetch(&L->connects, 1, __ATOMIC_RELAXED);
    if (L->transport->handshake != NULL) {
        u->state = U_HANDSHAKE;
        handshake(L, u);
        return;
    }
    u->state = U_IDLE;
    L->proto->connected(L, u);
}

/* ---- sending and reading ------------------------------------------------------------------ */

int loop_send(loop_t *L, user_t *u, int *err) {
    while (u->sent < u->out_len) {
        ssize_t n = L->transport->send(L, u, u->out + u->sent, u->out_len - u->sent);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                u->state = U_SENDING;
                if (rewatch(L, u) < 0) {
                    *err = errno;
                    return -1;
                }
                return 0;
            }
            *err = errno;
            return -1;
        }
        u->sent += (size_t)n;
    }
    int was_sending = u->state == U_SENDING;
    u->state = U_READING;
    if ((was_sending || u->want) && rewatch(L, u) < 0) {
        *err = errno;
        return -1;
    }
    return 1;
}

/* Bytes read: to the protocol. 1: the user moved on (its transaction ended); 0: read on. */
static int deliver(loop_t *L, user_t *u, const char *p, size_t n) {
    if (u->state == U_SENDING || u->state == U_READING) {
        u->got += n;
        return L->proto->received(L, u, p, n) != 0;
    }
    if (L->proto->idle(L, u, p, n) < 0) { /* bytes answering nothing sent: the connection is dropped */
        loop_close_conn(L, u);
        return 1;
    }
    return 0;
}

int loop_drain(loop_t *L, user_t *u) {
    for (;;) {
        ssize_t n = L->transport->recv(L, u, L->recv_buf, sizeof L->recv_buf);
        if (n > 0) {
            if (deliver(L, u, L->recv_buf, (size_t)n))
                return 1;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return 0;
    }
}

static void on_readable(loop_t *L, user_t *u) {
    for (;;) {
        ssize_t n = L->transport->recv(L, u, L->recv_buf, sizeof L->recv_buf);
        if (n > 0) {
            if (deliver(L, u, L->recv_buf, (size_t)n))
                return;
            if (u->fd < 0 || (size_t)n < sizeof L->recv_buf)
                return; /* level-triggered: more, if any, is another event */
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (u->want && rewatch(L, u) < 0) { /* a TLS record waits for the other direction */
                int e = errno;
                if (u->state == U_SENDING || u->state == U_READING) {
                    loop_close_conn(L, u);
                    loop_finish(L, u, 0, E_IO_OS, e);
                } else {
                    loop_close_conn(L, u);
                }
            }
            return;
        }
        int e = n < 0 ? errno : 0;
        if (u->state == U_SENDING || u->state == U_READING)
            L->proto->closed(L, u, e);
        else /* an idle connection the server closed: made anew when needed */
            loop_close_conn(L, u);
        return;
    }
}

static void on_event(loop_t *L, user_t *u, uint32_t events) {
    if (u->state == U_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(u->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            err = errno;
        if (err == 0 && !(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return;
        if (err != 0 || (events & (EPOLLERR | EPOLLHUP))) { /* this address refused: the next one */
            loop_close_conn(L, u);
            u->addr++;
            if (u->addr < L->n_addrs) {
                try_connect(L, u);
                return;
            }
            u->addr = 0;
            loop_finish(L, u, 0, E_CONNECT_OS, err ? err : ECONNREFUSED);
            return;
        }
        u->state = U_IDLE;
        if (rewatch(L, u) < 0) {
            int e = errno;
            loop_close_conn(L, u);
            loop_finish(L, u, 0, E_CONNECT_OS, e);
            return;
        }
        connected_tcp(L, u);
        return;
    }
    if (u->state == U_HANDSHAKE) {
        handshake(L, u);
        return;
    }
    if (u->state == U_SENDING && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) && u->want != 1) {
        L->proto->writable(L, u);
        if (u->fd < 0 || (u->state != U_READING && !(events & EPOLLIN)))
            return;
    }
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP) || (u->want == 2 && (events & EPOLLOUT)))
        on_readable(L, u);
}

/* Transactions past their deadline: the connection dropped, the transaction timed out. */
static void expire(loop_t *L, double now) {
    while (L->dl_len && dl_when(L, 0) <= now) {
        user_t *u = user_at(L, L->dl[0]);
        int err = u->state == U_CONNECTING || u->state == U_HANDSHAKE ? E_CONNECT_TIMEOUT : E_RESPONSE_TIMEOUT;
        loop_close_conn(L, u);
        loop_finish(L, u, 0, err, 0); /* takes it out of the heap */
        if (L->error_no) /* memory ran out: the loop stops at its top */
            return;
    }
}

/* ---- open loop: arrivals on a schedule, each in a slot of its own -------------------------- */

static int add_slot(loop_t *L, user_t **slot) {
    int32_t i = L->n_users;
    if (i / USER_CHUNK >= L->n_chunks) {
        user_t **chunks = mem_realloc(L->chunks, (size_t)(L->n_chunks + 1) * sizeof(user_t *));
        if (chunks == NULL)
            return -1;
        L->chunks = chunks;
        user_t *chunk = mem_calloc(USER_CHUNK, sizeof(user_t));
        if (chunk == NULL)
            return -1;
        L->chunks[L->n_chunks++] = chunk;
    }
    user_t *u = user_at(L, i);
    memset(u, 0, sizeof *u);
    u->index = i;
    u->fd = -1;
    u->dl_pos = -1;
    u->step = -1;
    L->n_users++;
    *slot = u;
    return 0;
}

static double arrival_gap(loop_t *L) {
    return L->poisson ? rng_exponential(&L->arrival_rng, 1.0 / L->rate) : 1.0 / L->rate;
}

/* engine.py's _start_arrival: arrival n at its intended time, or dropped (recorded) when
 * max_in_flight transactions are in flight. */
static void start_arrival(loop_t *L, int64_t n, double intended) {
    uint64_t rng = rng_init(L->seed, (uint64_t)n, 0);
    int32_t script = L->mix[rng_pick(&rng, L->cumulative, L->n_mix)];
    if (__atomic_load_n(&L->in_flight, __ATOMIC_RELAXED) >= L->max_in_flight) {
        double now = mono();
        const step_t *st = &L->steps[L->scripts[script].first];
        pthread_mutex_lock(&L->lock);
        row_t *r = new_row(L);
        if (r != NULL) {
            *r = (row_t){.intended = intended, .actual = now, .first = NAN, .end = now, .think = NAN,
                         .uid = (int32_t)n, .script = (int16_t)script, .tx = (int16_t)st->tx, .klass = st->klass,
                         .ok = 0, .err = E_DROPPED, .detail = (int32_t)L->max_in_flight};
        }
        L->dropped++;
        pthread_mutex_unlock(&L->lock);
        return;
    }
    user_t *u;
    if (L->free_slot >= 0) {
        u = user_at(L, L->free_slot);
        L->free_slot = u->next_ready;
    } else if (add_slot(L, &u) < 0) {
        loop_fail(L, ENOMEM);
        return;
    }
    u->uid = (int32_t)n;
    u->rng = rng;
    u->prng = rng_init(L->seed, (uint64_t)n, 1);
    u->script = script;
    u->step = 0;
    u->partial = 0;
    u->ready = 0;
    u->state = u->fd >= 0 ? U_IDLE : U_FREE;
    u->prev_end = intended;
    u->think = 0.0;
    start_transaction(L, u, intended, NAN); /* an open-loop arrival: no think before its first step */
}

static void arrivals_due(loop_t *L, double now) {
    while (!L->arrivals_over && L->next_arrival <= now && !L->error_no) {
        double t = L->next_arrival;
        if (stopped_for(L, t)) {
            L->arrivals_over = 1;
            break;
        }
        start_arrival(L, L->arrival_i * L->share_count + L->share_index, t);
        L->arrival_i++;
        L->next_arrival = t + arrival_gap(L);
    }
    if (!L->arrivals_over && stopped_for(L, L->next_arrival))
        L->arrivals_over = 1;
}

/* ---- a run cut short, a drain given up ----------------------------------------------------- */

/* Nobody parked wakes: their thinks are recorded as pending, as at the window's end. */
static void cut_parked(loop_t *L) {
    while (L->park_len) {
        user_t *u = user_at(L, park_pop(L).index);
        if (u->step >= 0 && !u->partial)
            emit_pending(L, u);
        stop_user(L, u);
    }
    L->arrivals_over = 1;
}

static void give_up_all(loop_t *L) {
    double now = mono();
    while (L->dl_len) {
        user_t *u = user_at(L, L->dl[0]);
        loop_close_conn(L, u);
        emit_row(L, u, now, 0, E_GIVEN_UP, 0, NULL, 0);
        dl_remove(L, u);
        __atomic_sub_fetch(&L->in_flight, 1, __ATOMIC_RELAXED);
        u->state = U_DONE;
    }
}

/* ---- the loop ---------------------------------------------------------------------------- */

#define MAX_EVENTS 256

/* epoll_wait; an interrupted wait is a wait with no events. -1: the loop's own failure. */
static int wait_events(loop_t *L, struct epoll_event *evs, int wait_ms) {
    int n = epoll_wait(L->epfd, evs, MAX_EVENTS, wait_ms);
    if (n < 0 && errno == EINTR)
        return 0;
    if (n < 0)
        loop_fail(L, errno);
    return n;
}

/* The eventfd's count read: Python poked (cut short, give up), which the loop reads at its top. */
static void take_poke(loop_t *L) {
    uint64_t v;
    if (read(L->efd, &v, sizeof v) < 0 && errno != EAGAIN) /* EAGAIN: already read */
        loop_fail(L, errno);
}

/* Everything due by `now`: parked users whose think ended, deadlines passed, open-loop arrivals.
 * Run at the timer's firing and after every turn the loop was awake for anyway (responses,
 * connects): a grid (timing.wake) only bounds how late a start may be when nothing else wakes
 * the loop, so at a rate that keeps it busy an arrival starts at the first turn after its time,
 * not at the next grid point, at no cost in wake-ups. */
static void run_due(loop_t *L, double now) {
    while (L->park_len && L->park[0].when <= now && !L->error_no) {
        user_t *u = user_at(L, park_pop(L).index);
        if (u->step < 0)
            logon(L, u, now);
        else {
            u->state = U_IDLE;
            start_due(L, u);
        }
    }
    expire(L, now);
    if (L->open_loop)
        arrivals_due(L, now);
}

static void timer_due(loop_t *L, double now) {
    uint64_t expirations;
    if (read(L->tfd, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
        loop_fail(L, errno);
    __atomic_add_fetch(&L->timer_wakes, 1, __ATOMIC_RELAXED);
    L->timer_at = -1.0;
    run_due(L, now);
}

int loop_run(loop_t *L) {
    struct epoll_event evs[MAX_EVENTS];
    for (int i = 0; i < L->n_users && !L->open_loop; i++) {
        user_t *u = user_at(L, i);
        if (!stopped_for(L, u->prev_end)) {
            if (park_push(L, u->prev_end, i) < 0) {
                loop_fail(L, ENOMEM);
                return -1;
            }
            u->state = U_PARKED;
        } else
            u->state = U_DONE;
    }
    if (L->open_loop) {
        L->next_arrival = L->t0 + arrival_gap(L);
        L->arrivals_over = stopped_for(L, L->next_arrival);
    }
    for (;;) {
        if (__atomic_load_n(&L->give_up, __ATOMIC_ACQUIRE)) {
            give_up_all(L);
            break;
        }
        if (__atomic_load_n(&L->cut, __ATOMIC_ACQUIRE) && !L->cut_done) {
            cut_parked(L);
            L->cut_done = 1;
        }
        if (L->error_no)
            return -1;
        /* the users made ready by the last turn (a user failing at once on every turn waits its turn) */
        L->ready = L->next;
        L->next = -1;
        while (L->ready >= 0) {
            user_t *u = user_at(L, L->ready);
            L->ready = u->next_ready;
            u->ready = 0;
            if (u->state == U_IDLE)
                start_due(L, u);
        }
        if (L->error_no)
            return -1;
        int64_t busy = __atomic_load_n(&L->in_flight, __ATOMIC_RELAXED);
        if (L->park_len == 0 && busy == 0 && L->next < 0 && (!L->open_loop || L->arrivals_over))
            break; /* everyone has stopped */
        arm_timer(L);
        if (L->error_no)
            return -1;
        int n = wait_events(L, evs, L->next >= 0 ? 0 : -1);
        if (n < 0)
            return -1;
        double now = mono();
        int timer_fired = 0;
        for (int i = 0; i < n && !L->error_no; i++) {
            uint64_t tag = evs[i].data.u64;
            if (tag == 0) { /* the timer: users now due, deadlines passed, arrivals */
                timer_due(L, now);
                timer_fired = 1;
            } else if (tag == 1) /* Python asks: cut short or give up (read at the loop's top) */
                take_poke(L);
            else {
                user_t *u = user_at(L, (int32_t)(tag - 3));
                if (u->fd >= 0)
                    on_event(L, u, evs[i].events);
            }
        }
        if (n > 0 && !timer_fired && !L->error_no) /* awake anyway: start what is due by now */
            run_due(L, mono());
    }
    return L->error_no ? -1 : 0;
}

/* open(): every user connected and logged on before the run, at once (postgres.py's open:
 * connection set-up is not a transaction); stops at the first failure, or at `timeout`. */
int loop_open(loop_t *L, double timeout) {
    struct epoll_event evs[MAX_EVENTS];
    double now = mono(), until = now + timeout;
    L->opening_left = L->n_users;
    for (int i = 0; i < L->n_users && !L->open_err && !L->error_no; i++) {
        user_t *u = user_at(L, i);
        u->opening = 1;
        loop_set_deadline(L, u, until);
        loop_connect(L, u);
    }
    while (L->opening_left > 0 && !L->open_err && !L->error_no && !__atomic_load_n(&L->cut, __ATOMIC_ACQUIRE)) {
        now = mono();
        if (now >= until) {
            L->open_err = E_CONNECT_TIMEOUT;
            break;
        }
        int n = wait_events(L, evs, (int)((until - now) * 1000) + 1);
        if (n < 0)
            break;
        for (int i = 0; i < n; i++) {
            uint64_t tag = evs[i].data.u64;
            if (tag == 1) {
                take_poke(L);
            } else if (tag >= 3) {
                user_t *u = user_at(L, (int32_t)(tag - 3));
                if (u->fd >= 0 && u->opening)
                    on_event(L, u, evs[i].events);
            }
        }
    }
    for (int i = 0; i < L->n_users; i++) { /* not logged on (a failure, the time, a cut): dropped */
        user_t *u = user_at(L, i);
        dl_remove(L, u);
        if (u->opening) {
            u->opening = 0;
            loop_close_conn(L, u);
        }
        u->state = U_IDLE;
    }
    L->timer_at = -1.0;
    return L->error_no ? -1 : 0;
}

/* ---- made and freed ------------------------------------------------------------------------ */

int loop_init(loop_t *L, int64_t users) {
    L->next = L->ready = -1;
    L->free_slot = -1;
    L->timer_at = -1.0;
    for (int64_t i = 0; i < users; i++) {
        user_t *u;
        if (add_slot(L, &u) < 0) {
            loop_fail(L, ENOMEM);
            return -1;
        }
        int64_t uid = L->first_user + i;
        u->uid = (int32_t)uid;
        u->rng = rng_init(L->seed, (uint64_t)uid, 0);
        u->prng = rng_init(L->seed, (uint64_t)uid, 1);
        u->prev_end = L->t0 + L->stagger * (double)uid / (double)(L->all_users > 1 ? L->all_users : 1);
    }
    if (L->open_loop)
        L->arrival_rng = rng_init(L->seed, (uint64_t)L->share_index, 2);
    L->epfd = epoll_create1(EPOLL_CLOEXEC);
    L->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    L->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (L->epfd < 0 || L->tfd < 0 || L->efd < 0) {
        loop_fail(L, errno);
        return -1;
    }
    struct epoll_event ev;
    ev.events = EPOLLIN;
    ev.data.u64 = 0;
    if (epoll_ctl(L->epfd, EPOLL_CTL_ADD, L->tfd, &ev) < 0) {
        loop_fail(L, errno);
        return -1;
    }
    ev.data.u64 = 1;
    if (epoll_ctl(L->epfd, EPOLL_CTL_ADD, L->efd, &ev) < 0) {
        loop_fail(L, errno);
        return -1;
    }
    return 0;
}

void loop_poke(loop_t *L) {
    uint64_t one = 1;
    if (L->efd >= 0 && write(L->efd, &one, sizeof one) < 0) { /* EAGAIN: a full counter is a poke already */
    }
}

void loop_close_all(loop_t *L, const char *goodbye, size_t goodbye_len) {
    for (int i = 0; i < L->n_users; i++) {
        user_t *u = user_at(L, i);
        if (u->fd >= 0 && goodbye_len && u->state != U_CONNECTING && u->state != U_HANDSHAKE)
            (void)!L->transport->send(L, u, goodbye, goodbye_len); /* best effort: the socket may be full */
        loop_close_conn(L, u);
    }
}

void loop_free(loop_t *L) {
    for (int i = 0; L->chunks != NULL && i < L->n_users; i++) {
        user_t *u = user_at(L, i);
        if (u->fd >= 0) {
            if (u->tls != NULL && L->transport != NULL)
                L->transport->close(L, u);
            close(u->fd);
            u->fd = -1;
        }
        if (L->proto != NULL)
            L->proto->free_user(L, u);
        free(u->drawn);
    }
    if (L->proto != NULL)
        L->proto->free(L);
    if (L->transport != NULL && L->transport->free != NULL)
        L->transport->free(L);
    for (int c = 0; c < L->n_chunks; c++)
        free(L->chunks[c]);
    free(L->chunks);
    L->chunks = NULL;
    L->n_chunks = L->n_users = 0;
    for (int i = 0; L->txs != NULL && i < L->n_txs; i++)
        params_free(L->txs[i].params, L->txs[i].n_params);
    free(L->txs);
    free(L->thinks);
    free(L->steps);
    free(L->scripts);
    free(L->mix);
    free(L->cumulative);
    free(L->addrs);
    free(L->addr_lens);
    free(L->park);
    free(L->dl);
    free(L->rows);
    free(L->pending);
    free(L->errs);
    free(L->open_msg);
    L->txs = NULL;
    L->thinks = NULL;
    L->steps = NULL;
    L->scripts = NULL;
    L->mix = NULL;
    L->cumulative = NULL;
    L->addrs = NULL;
    L->addr_lens = NULL;
    L->park = NULL;
    L->dl = NULL;
    L->rows = NULL;
    L->pending = NULL;
    L->errs = NULL;
    L->open_msg = NULL;
    if (L->epfd >= 0)
        close(L->epfd);
    if (L->tfd >= 0)
        close(L->tfd);
    if (L->efd >= 0)
        close(L->efd);
    L->epfd = L->tfd = L->efd = -1;
}

/* ---- the plain transport ------------------------------------------------------------------- */

static ssize_t plain_send(loop_t *L, user_t *u, const char *p, size_t n) {
    (void)L;
    return send(u->fd, p, n, MSG_NOSIGNAL);
}

static ssize_t plain_recv(loop_t *L, user_t *u, char *p, size_t n) {
    (void)L;
    return recv(u->fd, p, n, 0);
}

static void plain_close(loop_t *L, user_t *u) {
    (void)L;
    (void)u;
}

const transport_t TRANSPORT_PLAIN = {
    .name = "tcp", .handshake = NULL, .send = plain_send, .recv = plain_recv, .close = plain_close, .free = NULL,
};
