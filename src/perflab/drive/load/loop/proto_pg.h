/* What the PostgreSQL protocol sends, per transaction (binding.c builds it from native_pg.py's
 * spec; proto_pg.c reads it). */
#ifndef PERFLAB_PROTO_PG_H
#define PERFLAB_PROTO_PG_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int32_t stmt; /* the statement: sql[stmt], named names[stmt] on every connection */
    int n_args;
    int32_t *args; /* $1, $2, ...: which of the transaction's parameters */
} pgstep_t;

typedef struct {
    int n_steps; /* more than one: inside BEGIN .. COMMIT */
    pgstep_t *steps;
} pgtx_t;

typedef struct {
    char *startup; /* the StartupMessage (native_pg.py's startup_message) */
    size_t startup_len;
    char **sql, **names;
    int n_sql;
    pgtx_t *txs;
    int n_txs;
} pgdata_t;

void pgdata_free(pgdata_t *d);

#endif
