/* Python's side of the compiled loop: the Loop type (native_http.py and native_pg.py make one per
 * run and run it on a thread of their own, the GIL released), its rows taken in blocks, and the
 * parsers and random streams callable alone so tests can hold them to the Python path and to
 * hostile input (tests/core/test_native_parsers.py). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>

#include "http_parse.h"
#include "loop.h"
#include "mem.h"
#include "pg_wire.h"
#include "proto.h"
#include "proto_http.h"
#include "proto_pg.h"
#include "tls.h"
#include "transport.h"

_Static_assert(sizeof(row_t) == 56, "row_t is 56 bytes (native_http.ROW_DTYPE)");
_Static_assert(offsetof(row_t, uid) == 40 && offsetof(row_t, ok) == 50 && offsetof(row_t, detail) == 52,
               "row_t layout (native_http.ROW_DTYPE)");
_Static_assert(sizeof(pending_t) == 24, "pending_t is 24 bytes (native_http.PENDING_DTYPE)");

typedef struct {
    PyObject_HEAD
    loop_t L;
    int made;
} LoopObject;

/* ---- reading the spec ---------------------------------------------------------------------- */

static char *copy_bytes(PyObject *b, size_t *len) {
    char *data;
    Py_ssize_t n;
    if (PyBytes_AsStringAndSize(b, &data, &n) < 0)
        return NULL;
    char *out = mem_alloc((size_t)n + 1);
    if (out == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(out, data, (size_t)n);
    out[n] = '\0';
    *len = (size_t)n;
    return out;
}

/* bytes -> a C string of them; a NUL inside is refused (SQL and names travel as C strings). */
static char *copy_cstr(PyObject *b) {
    size_t n;
    char *text = copy_bytes(b, &n);
    if (text != NULL && strlen(text) != n) {
        free(text);
        PyErr_SetString(PyExc_ValueError, "a statement holds a NUL byte");
        return NULL;
    }
    return text;
}

static void *alloc_or_raise(size_t n, size_t size) {
    void *p = mem_calloc(n + 1, size);
    if (p == NULL)
        PyErr_NoMemory();
    return p;
}

static int bad(const char *what) {
    PyErr_SetString(PyExc_ValueError, what);
    return -1;
}

/* addresses: [(family, address, port)], every one resolved, tried in turn */
static int parse_addresses(loop_t *L, PyObject *addresses) {
    if (!PyList_Check(addresses) || PyList_GET_SIZE(addresses) < 1 || PyList_GET_SIZE(addresses) > 64)
        return bad("addresses: a list of 1 to 64 (family, address, port)");
    L->n_addrs = (int)PyList_GET_SIZE(addresses);
    if ((L->addrs = alloc_or_raise((size_t)L->n_addrs, sizeof *L->addrs)) == NULL ||
        (L->addr_lens = alloc_or_raise((size_t)L->n_addrs, sizeof *L->addr_lens)) == NULL)
        return -1;
    for (int i = 0; i < L->n_addrs; i++) {
        int family, port;
        const char *address;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(addresses, i), "isi", &family, &address, &port))
            return -1;
        if (family == AF_INET) {
            struct sockaddr_in *a = (struct sockaddr_in *)&L->addrs[i];
            a->sin_family = AF_INET;
            a->sin_port = htons((uint16_t)port);
            if (inet_pton(AF_INET, address, &a->sin_addr) != 1)
                goto not_numeric;
            L->addr_lens[i] = sizeof *a;
        } else if (family == AF_INET6) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&L->addrs[i];
            a->sin6_family = AF_INET6;
            a->sin6_port = htons((uint16_t)port);
            if (inet_pton(AF_INET6, address, &a->sin6_addr) != 1)
                goto not_numeric;
            L->addr_lens[i] = sizeof *a;
        } else {
            goto not_numeric;
        }
        continue;
    not_numeric:
        PyErr_Format(PyExc_ValueError, "not a numeric address of family %d: %s", family, address);
        return -1;
    }
    return 0;
}

/* params: per transaction (deadline, [(kind, a, b, texts, cumulative)]), texts a tuple per value
 * of its four encodings (bytes, or None where it has none) */
static int parse_params(loop_t *L, PyObject *params) {
    if (!PyList_Check(params) || PyList_GET_SIZE(params) < 1 || PyList_GET_SIZE(params) > 32767)
        return bad("params: one entry per transaction");
    L->n_txs = (int)PyList_GET_SIZE(params);
    if ((L->txs = alloc_or_raise((size_t)L->n_txs, sizeof(txcommon_t))) == NULL)
        return -1;
    for (int i = 0; i < L->n_txs; i++) {
        txcommon_t *t = &L->txs[i];
        PyObject *list;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(params, i), "dO!", &t->deadline, &PyList_Type, &list))
            return -1;
        t->n_params = (int)PyList_GET_SIZE(list);
        if (t->n_params > 65535)
            return bad("a transaction has at most 65535 parameters");
        if (t->n_params > L->max_params)
            L->max_params = t->n_params;
        if ((t->params = alloc_or_raise((size_t)t->n_params, sizeof(param_t))) == NULL)
            return -1;
        for (int k = 0; k < t->n_params; k++) {
            param_t *q = &t->params[k];
            long long a, b;
            PyObject *values, *cumulative;
            if (!PyArg_ParseTuple(PyList_GET_ITEM(list, k), "iLLO!O!", &q->kind, &a, &b, &PyTuple_Type, &values,
                                  &PyTuple_Type, &cumulative))
                return -1;
            q->a = a;
            q->b = b;
            q->n_values = (int)PyTuple_GET_SIZE(values);
            int needs_values = q->kind == P_CHOICE || q->kind == P_WEIGHTED || q->kind == P_CONSTANT;
            if (q->kind < P_RANDOM_INT || q->kind > P_CONSTANT || (needs_values && q->n_values < 1) ||
                (!needs_values && q->n_values != 0) ||
                (q->kind == P_WEIGHTED && PyTuple_GET_SIZE(cumulative) != q->n_values) ||
                (q->kind == P_RANDOM_INT && (b < a || (double)(b - a) >= 9007199254740992.0)))
                return bad("a parameter's kind, range, values or weights out of order");
            if ((q->texts = alloc_or_raise((size_t)q->n_values * N_ENC, sizeof(char *))) == NULL ||
                (q->lens = alloc_or_raise((size_t)q->n_values * N_ENC, sizeof(uint32_t))) == NULL ||
                (q->cumulative = alloc_or_raise((size_t)q->n_values, sizeof(double))) == NULL)
                return -1;
            for (int v = 0; v < q->n_values; v++) {
                PyObject *texts = PyTuple_GET_ITEM(values, v);
                if (!PyTuple_Check(texts) || PyTuple_GET_SIZE(texts) != N_ENC)
                    return bad("a parameter value's texts: a tuple of its four encodings");
                for (int e = 0; e < N_ENC; e++) {
                    PyObject *text = PyTuple_GET_ITEM(texts, e);
                    size_t n = 0;
                    if (text == Py_None)
                        continue;
                    if (!PyBytes_Check(text))
                        return bad("a parameter value's text is bytes or None");
                    if ((q->texts[v * N_ENC + e] = copy_bytes(text, &n)) == NULL)
                        return -1;
                    q->lens[v * N_ENC + e] = (uint32_t)n;
                }
                if (q->kind == P_WEIGHTED) {
                    q->cumulative[v] = PyFloat_AsDouble(PyTuple_GET_ITEM(cumulative, v));
                    if (PyErr_Occurred())
                        return -1;
                }
            }
        }
    }
    return 0;
}

/* parts: [bytes | (param, encoding)] -> part_t[], their literals copied into one block */
static int parse_parts(loop_t *L, int tx, PyObject *list, part_t **parts, int *n, char **lits) {
    if (!PyList_Check(list))
        return bad("a request's parts: a list");
    *n = (int)PyList_GET_SIZE(list);
    size_t bytes = 0;
    for (int i = 0; i < *n; i++)
        if (PyBytes_Check(PyList_GET_ITEM(list, i)))
            bytes += (size_t)PyBytes_GET_SIZE(PyList_GET_ITEM(list, i));
    if ((*parts = alloc_or_raise((size_t)*n, sizeof(part_t))) == NULL || (*lits = alloc_or_raise(bytes, 1)) == NULL)
        return -1;
    size_t at = 0;
    for (int i = 0; i < *n; i++) {
        PyObject *item = PyList_GET_ITEM(list, i);
        part_t *p = &(*parts)[i];
        if (PyBytes_Check(item)) {
            p->param = -1;
            p->n = (size_t)PyBytes_GET_SIZE(item);
            memcpy(*lits + at, PyBytes_AS_STRING(item), p->n);
            p->p = *lits + at;
            at += p->n;
        } else if (!PyArg_ParseTuple(item, "ii", &p->param, &p->enc)) {
            return -1;
        } else if (p->param < 0 || p->param >= L->txs[tx].n_params || p->enc < 0 || p->enc >= N_ENC) {
            return bad("a request's part names no parameter of its transaction");
        }
    }
    return 0;
}

static int parse_http(loop_t *L, PyObject *txs, int raw, int close_each) {
    httpdata_t *d = alloc_or_raise(1, sizeof *d);
    if (d == NULL)
        return -1;
    L->pdata = d;
    d->close_each = close_each;
    L->proto = raw ? &PROTO_RAW : &PROTO_HTTP;
    d->n_txs = (int)PyList_GET_SIZE(txs);
    if (d->n_txs != L->n_txs)
        return bad("one request (or message) per transaction");
    if ((d->txs = alloc_or_raise((size_t)d->n_txs, sizeof(httptx_t))) == NULL)
        return -1;
    for (int i = 0; i < d->n_txs; i++) {
        httptx_t *t = &d->txs[i];
        PyObject *item = PyList_GET_ITEM(txs, i), *wire, *expect;
        if (raw) {
            Py_ssize_t reply_len;
            if (!PyArg_ParseTuple(item, "O!nO", &PyBytes_Type, &wire, &reply_len, &expect))
                return -1;
            if (reply_len < 1 || reply_len > (1 << 20))
                return bad("a raw exchange reads 1 byte to 1 MiB back");
            t->reply_len = (size_t)reply_len;
            if (expect != Py_None && (!PyBytes_Check(expect) || PyBytes_GET_SIZE(expect) != reply_len))
                return bad("a raw exchange's expected reply is reply_len bytes, or None");
        } else {
            PyObject *head, *body, *statuses;
            int idempotent, head_only;
            if (!PyArg_ParseTuple(item, "OOOppO!O", &wire, &head, &body, &idempotent, &head_only, &PyTuple_Type,
                                  &statuses, &expect))
                return -1;
            t->idempotent = idempotent;
            t->head_only = head_only;
            if (wire == Py_None) { /* a request with parameters: its parts */
                if (parse_parts(L, i, head, &t->head, &t->n_head, &t->lits) < 0)
                    return -1;
                t->n_body = -1;
                if (body != Py_None && parse_parts(L, i, body, &t->body, &t->n_body, &t->body_lits) < 0)
                    return -1;
            }
            if (PyTuple_GET_SIZE(statuses) > 0) {
                if ((t->ok_status = alloc_or_raise(1000, 1)) == NULL)
                    return -1;
                for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(statuses); k++) {
                    long s = PyLong_AsLong(PyTuple_GET_ITEM(statuses, k));
                    if (s == -1 && PyErr_Occurred())
                        return -1;
                    if (s >= 0 && s < 1000)
                        t->ok_status[s] = 1;
                }
            }
        }
        if (wire != Py_None) {
            if (!PyBytes_Check(wire))
                return bad("a request's wire is bytes or None");
            if ((t->wire = copy_bytes(wire, &t->wire_len)) == NULL)
                return -1;
        }
        if (expect != Py_None) {
            if (!PyBytes_Check(expect) || (!raw && PyBytes_GET_SIZE(expect) > HTTP_MAX_EXPECT))
                return bad("expect: bytes (64 KiB at most) or None");
            if ((t->expect = copy_bytes(expect, &t->expect_len)) == NULL)
                return -1;
        }
    }
    return 0;
}

/* ("pg", startup, [sql]) with txs: [[(statement, (parameter, ...))]] */
static int parse_pg(loop_t *L, PyObject *protocol, PyObject *txs) {
    PyObject *startup, *sqls;
    const char *name;
    if (!PyArg_ParseTuple(protocol, "sO!O!", &name, &PyBytes_Type, &startup, &PyList_Type, &sqls))
        return -1;
    pgdata_t *d = alloc_or_raise(1, sizeof *d);
    if (d == NULL)
        return -1;
    L->pdata = d;
    L->proto = &PROTO_PG;
    if ((d->startup = copy_bytes(startup, &d->startup_len)) == NULL)
        return -1;
    d->n_sql = (int)PyList_GET_SIZE(sqls);
    if ((d->sql = alloc_or_raise((size_t)d->n_sql, sizeof(char *))) == NULL ||
        (d->names = alloc_or_raise((size_t)d->n_sql, sizeof(char *))) == NULL)
        return -1;
    for (int i = 0; i < d->n_sql; i++) {
        PyObject *sql = PyList_GET_ITEM(sqls, i);
        if (!PyBytes_Check(sql))
            return bad("a statement is bytes");
        if ((d->sql[i] = copy_cstr(sql)) == NULL || (d->names[i] = alloc_or_raise(24, 1)) == NULL)
            return -1;
        snprintf(d->names[i], 24, "perflab_%d", i);
    }
    d->n_txs = (int)PyList_GET_SIZE(txs);
    if (d->n_txs != L->n_txs)
        return bad("one statement list per transaction");
    if ((d->txs = alloc_or_raise((size_t)d->n_txs, sizeof(pgtx_t))) == NULL)
        return -1;
    for (int i = 0; i < d->n_txs; i++) {
        pgtx_t *t = &d->txs[i];
        PyObject *steps = PyList_GET_ITEM(txs, i);
        if (!PyList_Check(steps) || PyList_GET_SIZE(steps) < 1 || PyList_GET_SIZE(steps) > 32767)
            return bad("a transaction has 1 to 32767 statements");
        t->n_steps = (int)PyList_GET_SIZE(steps);
        if ((t->steps = alloc_or_raise((size_t)t->n_steps, sizeof(pgstep_t))) == NULL)
            return -1;
        for (int k = 0; k < t->n_steps; k++) {
            pgstep_t *st = &t->steps[k];
            PyObject *args;
            if (!PyArg_ParseTuple(PyList_GET_ITEM(steps, k), "iO!", &st->stmt, &PyTuple_Type, &args))
                return -1;
            if (st->stmt < 0 || st->stmt >= d->n_sql || PyTuple_GET_SIZE(args) > 65535)
                return bad("a step's statement or parameters out of range");
            st->n_args = (int)PyTuple_GET_SIZE(args);
            if ((st->args = alloc_or_raise((size_t)st->n_args, sizeof(int32_t))) == NULL)
                return -1;
            for (int j = 0; j < st->n_args; j++) {
                long arg = PyLong_AsLong(PyTuple_GET_ITEM(args, j));
                if (arg == -1 && PyErr_Occurred())
                    return -1;
                if (arg < 0 || arg >= L->txs[i].n_params)
                    return bad("a statement's parameter is not one of its transaction's");
                st->args[j] = (int32_t)arg;
            }
        }
    }
    return 0;
}

/* thinks: [(kind, a, b, c)]; scripts: [[(tx, klass, think), ...]]; mix: [script]; cumulative: [float] */
static int parse_workload(loop_t *L, PyObject *thinks, PyObject *scripts, PyObject *mix, PyObject *cumulative,
                          int init) {
    L->n_thinks = (int)PyList_GET_SIZE(thinks);
    if ((L->thinks = alloc_or_raise((size_t)L->n_thinks, sizeof(think_t))) == NULL)
        return -1;
    for (int i = 0; i < L->n_thinks; i++) {
        think_t *t = &L->thinks[i];
        if (!PyArg_ParseTuple(PyList_GET_ITEM(thinks, i), "iddd", &t->kind, &t->a, &t->b, &t->c))
            return -1;
    }
    L->n_scripts = (int)PyList_GET_SIZE(scripts);
    if (L->n_scripts < 1 || L->n_scripts > 32767)
        return bad("1 to 32767 scripts");
    if ((L->scripts = alloc_or_raise((size_t)L->n_scripts, sizeof(script_t))) == NULL)
        return -1;
    int total = 0;
    for (int i = 0; i < L->n_scripts; i++) {
        PyObject *s = PyList_GET_ITEM(scripts, i);
        if (!PyList_Check(s) || PyList_GET_SIZE(s) < 1 || PyList_GET_SIZE(s) > (1 << 20))
            return bad("a script is a non-empty list of steps");
        total += (int)PyList_GET_SIZE(s);
    }
    if ((L->steps = alloc_or_raise((size_t)total, sizeof(step_t))) == NULL)
        return -1;
    L->n_steps = total;
    int k = 0;
    for (int i = 0; i < L->n_scripts; i++) {
        PyObject *s = PyList_GET_ITEM(scripts, i);
        L->scripts[i].first = k;
        L->scripts[i].count = (int32_t)PyList_GET_SIZE(s);
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(s); j++, k++) {
            int tx, klass, think;
            if (!PyArg_ParseTuple(PyList_GET_ITEM(s, j), "iii", &tx, &klass, &think))
                return -1;
            if (tx < 0 || tx >= L->n_txs || think < 0 || think >= L->n_thinks || klass < 0 || klass > 32767)
                return bad("a step's transaction, class or think out of range");
            L->steps[k].tx = tx;
            L->steps[k].klass = (int16_t)klass;
            L->steps[k].think = think;
        }
    }
    L->n_mix = (int)PyList_GET_SIZE(mix);
    if (L->n_mix < 1 || L->n_mix != PyList_GET_SIZE(cumulative))
        return bad("mix and cumulative: one entry each per script drawn");
    if ((L->mix = alloc_or_raise((size_t)L->n_mix, sizeof(int32_t))) == NULL ||
        (L->cumulative = alloc_or_raise((size_t)L->n_mix, sizeof(double))) == NULL)
        return -1;
    for (int i = 0; i < L->n_mix; i++) {
        long m = PyLong_AsLong(PyList_GET_ITEM(mix, i));
        double c = PyFloat_AsDouble(PyList_GET_ITEM(cumulative, i));
        if (PyErr_Occurred())
            return -1;
        if (m < 0 || m >= L->n_scripts)
            return bad("a mix entry names no script");
        L->mix[i] = (int32_t)m;
        L->cumulative[i] = c;
    }
    if (init >= L->n_scripts)
        return bad("init names no script");
    L->init = init;
    return 0;
}

/* ("closed", users, first_user, all_users) or ("open", rate, poisson, max_in_flight, index, count) */
static int parse_load(loop_t *L, PyObject *load, long long *users) {
    const char *kind;
    if (!PyTuple_Check(load) || PyTuple_GET_SIZE(load) < 1)
        return bad("load: a tuple");
    *users = 0;
    if (PyTuple_GET_SIZE(load) == 4) {
        long long first, all;
        if (!PyArg_ParseTuple(load, "sLLL", &kind, users, &first, &all))
            return -1;
        if (strcmp(kind, "closed") != 0 || *users < 0 || *users > 100000000)
            return bad("load: (\"closed\", users, first_user, all_users)");
        L->first_user = first;
        L->all_users = all;
        return 0;
    }
    long long max_in_flight, index, count;
    int poisson;
    if (!PyArg_ParseTuple(load, "sdpLLL", &kind, &L->rate, &poisson, &max_in_flight, &index, &count))
        return -1;
    if (strcmp(kind, "open") != 0 || !(L->rate > 0) || max_in_flight < 1 || count < 1 || index < 0 || index >= count)
        return bad("load: (\"open\", rate, poisson, max_in_flight, index, count)");
    L->open_loop = 1;
    L->poisson = poisson;
    L->max_in_flight = max_in_flight;
    L->share_index = index;
    L->share_count = count;
    return 0;
}

/* Loop(addresses, timeout, thinks, scripts, mix, cumulative, init, load, seed, t0, stagger,
 *      stop_at, residual_start, protocol, txs, params, tls=None, grids=(0.0, 0.0))
 * grids: (think ends and deadlines, arrivals): each due time put off to its grid's next point
 * native_http.py's NativeEngine._make_core builds it (its docstring says each part). */
static int Loop_init(LoopObject *self, PyObject *args, PyObject *kwds) {
    loop_t *L = &self->L;
    PyObject *addresses, *thinks, *scripts, *mix, *cumulative, *load, *protocol, *txs, *params, *tls = Py_None;
    PyObject *grids = NULL;
    int init, residual_start;
    double timeout;
    unsigned long long seed;
    long long users;
    (void)kwds;
    if (self->made) {
        PyErr_SetString(PyExc_RuntimeError, "a Loop is made once");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "OdO!O!O!O!iO!KdddpOO!O!|OO!", &addresses, &timeout, &PyList_Type, &thinks,
                          &PyList_Type, &scripts, &PyList_Type, &mix, &PyList_Type, &cumulative, &init,
                          &PyTuple_Type, &load, &seed, &L->t0, &L->stagger, &L->stop_at, &residual_start, &protocol,
                          &PyList_Type, &txs, &PyList_Type, &params, &tls, &PyTuple_Type, &grids))
        return -1;
    if (grids != NULL && !PyArg_ParseTuple(grids, "dd", &L->think_grid, &L->arrival_grid))
        return -1;
    if (!(L->think_grid >= 0.0 && L->think_grid < 1.0 && L->arrival_grid >= 0.0 && L->arrival_grid < 1.0)) {
        PyErr_SetString(PyExc_ValueError, "grids: each 0 (exact) or a step below a second"); /* NaN too */
        return -1;
    }
    self->made = 1;
    L->timeout = timeout;
    L->seed = (uint64_t)seed;
    L->residual_start = residual_start;
    L->transport = &TRANSPORT_PLAIN;
    if (parse_addresses(L, addresses) < 0 || parse_params(L, params) < 0 ||
        parse_workload(L, thinks, scripts, mix, cumulative, init) < 0 || parse_load(L, load, &users) < 0)
        goto fail;
    if (PyUnicode_Check(protocol) && (PyUnicode_CompareWithASCIIString(protocol, "http") == 0 ||
                                      PyUnicode_CompareWithASCIIString(protocol, "http-close") == 0)) {
        if (parse_http(L, txs, 0, PyUnicode_CompareWithASCIIString(protocol, "http-close") == 0) < 0)
            goto fail;
    } else if (PyUnicode_Check(protocol) && PyUnicode_CompareWithASCIIString(protocol, "raw") == 0) {
        if (parse_http(L, txs, 1, 0) < 0)
            goto fail;
    } else if (PyTuple_Check(protocol)) {
        if (parse_pg(L, protocol, txs) < 0)
            goto fail;
    } else {
        bad("protocol: \"http\", \"http-close\", \"raw\" or (\"pg\", startup, statements)");
        goto fail;
    }
    if (tls != Py_None && tls_configure(L, tls) < 0)
        goto fail;
    if (loop_init(L, users) < 0) {
        errno = L->error_no;
        PyErr_SetFromErrno(L->error_no == ENOMEM ? PyExc_MemoryError : PyExc_OSError);
        goto fail;
    }
    return 0;
fail:
    loop_free(L);
    return -1;
}

static PyObject *Loop_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    (void)args;
    (void)kwds;
    LoopObject *self = (LoopObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    loop_t *L = &self->L;
    L->epfd = L->tfd = L->efd = -1;
    L->init = -1;
    L->next = L->ready = L->free_slot = -1;
    pthread_mutex_init(&L->lock, NULL);
    return (PyObject *)self;
}

static void Loop_dealloc(LoopObject *self) {
    loop_free(&self->L);
    pthread_mutex_destroy(&self->L.lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The loop's own failure as Python's OSError (ENOMEM: the rows memory did not hold, said). */
static PyObject *raise_loop_error(loop_t *L) {
    if (L->error_no == ENOMEM) {
        PyObject *exc = PyObject_CallFunction(PyExc_OSError, "is", ENOMEM,
            L->lost ? "the compiled loop ran out of memory; the rows of transactions after it are lost"
                    : "the compiled loop ran out of memory");
        if (exc != NULL) {
            PyErr_SetObject(PyExc_OSError, exc);
            Py_DECREF(exc);
        }
        return NULL;
    }
    errno = L->error_no;
    return PyErr_SetFromErrno(PyExc_OSError);
}

static int check_made(LoopObject *self) {
    if (!self->made || self->L.epfd < 0) { /* (an open loop has no users until its first arrival) */
        PyErr_SetString(PyExc_RuntimeError, "the Loop was not made");
        return -1;
    }
    return 0;
}

static PyObject *Loop_run(LoopObject *self, PyObject *unused) {
    (void)unused;
    loop_t *L = &self->L;
    if (check_made(self) < 0)
        return NULL;
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
    if (rc < 0)
        return raise_loop_error(L);
    Py_RETURN_NONE;
}

/* open(timeout) -> None, or (error kind, detail, the server's ErrorResponse fields): the
 * PostgreSQL users logged on before the run, the GIL released. */
static PyObject *Loop_open(LoopObject *self, PyObject *args) {
    loop_t *L = &self->L;
    double timeout;
    if (!PyArg_ParseTuple(args, "d", &timeout))
        return NULL;
    if (check_made(self) < 0)
        return NULL;
    if (L->proto != &PROTO_PG || L->running || L->finished || L->open_loop) {
        PyErr_SetString(PyExc_RuntimeError, "open() is a closed-loop PostgreSQL Loop's, once, before run()");
        return NULL;
    }
    L->running = 1;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = loop_open(L, timeout);
    Py_END_ALLOW_THREADS
    L->running = 0;
    if (rc < 0)
        return raise_loop_error(L);
    if (!L->open_err)
        Py_RETURN_NONE;
    return Py_BuildValue("(iiy#)", L->open_err, L->open_detail, L->open_msg ? L->open_msg : "",
                         (Py_ssize_t)L->open_msg_len);
}

/* close(): the users' connections closed now (a PostgreSQL session told first), not when the Loop is freed. */
static PyObject *Loop_close(LoopObject *self, PyObject *unused) {
    (void)unused;
    loop_t *L = &self->L;
    if (L->running) {
        PyErr_SetString(PyExc_RuntimeError, "close() while the Loop runs");
        return NULL;
    }
    if (self->made)
        loop_close_all(L, L->proto == &PROTO_PG ? PG_TERMINATE : NULL, L->proto == &PROTO_PG ? sizeof PG_TERMINATE : 0);
    Py_RETURN_NONE;
}

static PyObject *Loop_cut(LoopObject *self, PyObject *unused) {
    (void)unused;
    __atomic_store_n(&self->L.cut, 1, __ATOMIC_RELEASE);
    loop_poke(&self->L);
    Py_RETURN_NONE;
}

static PyObject *Loop_give_up(LoopObject *self, PyObject *unused) {
    (void)unused;
    __atomic_store_n(&self->L.cut, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&self->L.give_up, 1, __ATOMIC_RELEASE);
    loop_poke(&self->L);
    Py_RETURN_NONE;
}

/* take() -> (rows: bytes, pending: bytes, connects: int, errors: bytes, dropped: int): what was
 * recorded since the last take, the connections made so far, the words of the rows that carry
 * them (each a native uint32 length and the words; such a row's detail is its offset) and the
 * arrivals dropped so far. */
static PyObject *Loop_take(LoopObject *self, PyObject *unused) {
    (void)unused;
    loop_t *L = &self->L;
    pthread_mutex_lock(&L->lock);
    row_t *rows = L->rows;
    size_t n_rows = L->rows_len;
    pending_t *pending = L->pending;
    size_t n_pending = L->pending_len;
    char *errs = L->errs;
    size_t n_errs = L->errs_len;
    int64_t dropped = L->dropped;
    L->rows = NULL;
    L->rows_len = L->rows_cap = 0;
    L->pending = NULL;
    L->pending_len = L->pending_cap = 0;
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
    return Py_BuildValue("(NNLNL)", r, p, (long long)__atomic_load_n(&L->connects, __ATOMIC_RELAXED), e,
                         (long long)dropped);
}

static PyObject *Loop_get_in_flight(LoopObject *self, void *closure) {
    (void)closure;
    return PyLong_FromLongLong((long long)__atomic_load_n(&self->L.in_flight, __ATOMIC_RELAXED));
}

static PyObject *Loop_get_connects(LoopObject *self, void *closure) {
    (void)closure;
    return PyLong_FromLongLong((long long)__atomic_load_n(&self->L.connects, __ATOMIC_RELAXED));
}

static PyObject *Loop_get_handshakes(LoopObject *self, void *closure) {
    (void)closure;
    return Py_BuildValue("(LL)", (long long)__atomic_load_n(&self->L.handshakes, __ATOMIC_RELAXED),
                         (long long)__atomic_load_n(&self->L.resumed, __ATOMIC_RELAXED));
}

static PyObject *Loop_get_commits(LoopObject *self, void *closure) {
    (void)closure;
    return Py_BuildValue("(LL)", (long long)__atomic_load_n(&self->L.commits, __ATOMIC_RELAXED),
                         (long long)__atomic_load_n(&self->L.commit_us, __ATOMIC_RELAXED));
}

static PyObject *Loop_get_timer_wakes(LoopObject *self, void *closure) {
    (void)closure;
    return PyLong_FromLongLong((long long)__atomic_load_n(&self->L.timer_wakes, __ATOMIC_RELAXED));
}

static PyObject *Loop_get_slots(LoopObject *self, void *closure) {
    (void)closure;
    return PyLong_FromLong(self->L.n_users);
}

static PyMethodDef Loop_methods[] = {
    {"open", (PyCFunction)Loop_open, METH_VARARGS, "PostgreSQL users: log every user on before run() (releases the GIL)."},
    {"close", (PyCFunction)Loop_close, METH_NOARGS, "Close the users' connections."},
    {"run", (PyCFunction)Loop_run, METH_NOARGS, "Run the users until they have all stopped (releases the GIL)."},
    {"cut", (PyCFunction)Loop_cut, METH_NOARGS, "The run is cut short: nobody parked wakes; in-flight ones end."},
    {"give_up", (PyCFunction)Loop_give_up, METH_NOARGS, "Record what is in flight as given up, and return."},
    {"take", (PyCFunction)Loop_take, METH_NOARGS, "(rows, pending thinks, connects, errors, dropped) since the last take."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Loop_getset[] = {
    {"in_flight", (getter)Loop_get_in_flight, NULL, "transactions in flight", NULL},
    {"connects", (getter)Loop_get_connects, NULL, "connections made", NULL},
    {"handshakes", (getter)Loop_get_handshakes, NULL, "(TLS handshakes, of them resumed)", NULL},
    {"commits", (getter)Loop_get_commits, NULL, "(COMMITs waited for, their round trips in us): PostgreSQL users", NULL},
    {"slots", (getter)Loop_get_slots, NULL, "users, or open loop's arrival slots so far", NULL},
    {"timer_wakes", (getter)Loop_get_timer_wakes, NULL, "the loop's timer firings (on a grid: one per grid point at most)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject LoopType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "perflab.drive.load.http_loop.Loop",
    .tp_basicsize = sizeof(LoopObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Simulated users or arrivals on HTTP, TCP or PostgreSQL connections (see native_http.py).",
    .tp_new = Loop_new,
    .tp_init = (initproc)Loop_init,
    .tp_dealloc = (destructor)Loop_dealloc,
    .tp_methods = Loop_methods,
    .tp_getset = Loop_getset,
};

/* ---- the pieces alone, for the tests ------------------------------------------------------ */

/* rng_state(seed, stream, substream): UserRandom's initial state, to test the two agree. */
static PyObject *py_rng_state(PyObject *self, PyObject *args) {
    (void)self;
    unsigned long long seed, stream, sub;
    if (!PyArg_ParseTuple(args, "KKK", &seed, &stream, &sub))
        return NULL;
    return PyLong_FromUnsignedLongLong(rng_init(seed, stream, sub));
}

/* draw(state, kind, a, b, c, residual, n) -> list of n thinks: the draws, to test them against thinktime.py */
static PyObject *py_draw(PyObject *self, PyObject *args) {
    (void)self;
    unsigned long long state;
    think_t t;
    int residual, n;
    if (!PyArg_ParseTuple(args, "Kidddpi", &state, &t.kind, &t.a, &t.b, &t.c, &residual, &n))
        return NULL;
    if (n < 0)
        return PyErr_Format(PyExc_ValueError, "n >= 0");
    uint64_t s = state;
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *x = PyFloat_FromDouble(residual ? think_residual(&t, &s) : think_sample(&t, &s));
        if (x == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, x);
    }
    return out;
}

typedef struct {
    char *p;
    size_t len, cap;
    int nomem;
} sink_t;

static void keep(void *ctx, const char *p, size_t n) {
    sink_t *s = ctx;
    if (mem_grow(&s->p, &s->cap, s->len + n) < 0) {
        s->nomem = 1;
        return;
    }
    memcpy(s->p + s->len, p, n);
    s->len += n;
}

static const char *http_result(int r) {
    return r == HTTP_DONE ? "done" : r == HTTP_MORE ? "more" : r == HTTP_NOMEM ? "nomem" : "error";
}

/* parse_http(pieces, head_only=False, eof=False) -> (result, status, keepalive, body, used, error, framing):
 * http_parse.c fed the pieces in order until the response ends or fails; `eof`: the server closes
 * after the last piece. used: bytes of all the pieces the response took (-1 after an error). */
static PyObject *py_parse_http(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *pieces;
    int head_only = 0, eof = 0;
    if (!PyArg_ParseTuple(args, "O!|pp", &PyList_Type, &pieces, &head_only, &eof))
        return NULL;
    http_resp_t r;
    memset(&r, 0, sizeof r);
    http_start(&r, head_only);
    sink_t body = {NULL, 0, 0, 0};
    size_t used_total = 0;
    int result = HTTP_MORE;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(pieces) && result == HTTP_MORE; i++) {
        PyObject *piece = PyList_GET_ITEM(pieces, i);
        if (!PyBytes_Check(piece)) {
            http_free(&r);
            free(body.p);
            return PyErr_Format(PyExc_TypeError, "a piece is bytes");
        }
        size_t used = 0;
        result = http_feed(&r, PyBytes_AS_STRING(piece), (size_t)PyBytes_GET_SIZE(piece), &used, keep, &body);
        used_total += used;
    }
    if (result == HTTP_MORE && eof)
        result = http_eof(&r);
    if (body.nomem)
        result = HTTP_NOMEM;
    Py_ssize_t used = result == HTTP_DONE || result == HTTP_MORE ? (Py_ssize_t)used_total : -1; /* (an error's: none) */
    static const char *framings[] = {"none", "length", "chunked", "close"};
    PyObject *out = Py_BuildValue("(siiy#nis)", http_result(result), (int)r.status, (int)r.keepalive,
                                  body.p ? body.p : "", (Py_ssize_t)body.len, used, (int)r.error,
                                  framings[r.body & 3]);
    http_free(&r);
    free(body.p);
    return out;
}

/* pg_messages(pieces) -> (messages, result, used): pg_wire.c's reader fed the pieces in order;
 * messages [(type, kept body or None, length)]; result "more" (between or inside a message at
 * the end), "bad" (malformed). */
static PyObject *py_pg_messages(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *pieces;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &pieces))
        return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    pg_reader_t rd;
    memset(&rd, 0, sizeof rd);
    const char *result = "more";
    size_t used_total = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(pieces) && strcmp(result, "more") == 0; i++) {
        PyObject *piece = PyList_GET_ITEM(pieces, i);
        if (!PyBytes_Check(piece)) {
            PyErr_SetString(PyExc_TypeError, "a piece is bytes");
            goto error;
        }
        const char *p = PyBytes_AS_STRING(piece);
        size_t n = (size_t)PyBytes_GET_SIZE(piece), pos = 0;
        while (pos < n) {
            pg_msg_t m;
            size_t used = 0;
            int r = pg_next(&rd, p + pos, n - pos, &used, &m);
            pos += used;
            used_total += used;
            if (r == PG_BAD || r == PG_NOMEM) {
                result = r == PG_BAD ? "bad" : "nomem";
                break;
            }
            if (r == PG_MORE)
                break;
            PyObject *body = m.body != NULL ? PyBytes_FromStringAndSize(m.body, (Py_ssize_t)m.kept) : Py_NewRef(Py_None);
            PyObject *item = body ? Py_BuildValue("(s#NI)", &m.type, (Py_ssize_t)1, body, (unsigned int)m.len) : NULL;
            if (item == NULL || PyList_Append(out, item) < 0) {
                Py_XDECREF(item);
                goto error;
            }
            Py_DECREF(item);
        }
    }
    pg_reader_free(&rd);
    return Py_BuildValue("(Nsn)", out, pg_between(&rd) || strcmp(result, "more") != 0 ? result : "partial",
                         (Py_ssize_t)used_total);
error:
    pg_reader_free(&rd);
    Py_DECREF(out);
    return NULL;
}

/* fail_allocations(n): the n-th allocation from now fails, and every one after it (0: none) --
 * how the tests run a loop out of memory. */
static PyObject *py_fail_allocations(PyObject *self, PyObject *args) {
    (void)self;
    long n;
    if (!PyArg_ParseTuple(args, "l", &n))
        return NULL;
    mem_fail_after(n);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"rng_state", py_rng_state, METH_VARARGS, "UserRandom(seed, stream, substream).state"},
    {"draw", py_draw, METH_VARARGS, "n think draws from a stream state"},
    {"parse_http", py_parse_http, METH_VARARGS, "The HTTP response parser fed pieces (tests)."},
    {"pg_messages", py_pg_messages, METH_VARARGS, "The PostgreSQL message reader fed pieces (tests)."},
    {"fail_allocations", py_fail_allocations, METH_VARARGS, "Make the n-th allocation from now fail (tests)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "http_loop",
                                    "perflab's compiled loop (drive/load/native_http.py, native_pg.py).", -1,
                                    module_methods, NULL, NULL, NULL, NULL};

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
    if (PyModule_AddIntConstant(m, "ROW_SIZE", (long)sizeof(row_t)) < 0 ||
        PyModule_AddIntConstant(m, "PENDING_SIZE", (long)sizeof(pending_t)) < 0 ||
        PyModule_AddIntConstant(m, "MAX_EXPECT", HTTP_MAX_EXPECT) < 0 ||
        PyModule_AddStringConstant(m, "TLS", tls_available()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
