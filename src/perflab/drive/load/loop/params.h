/* A transaction's parameters, drawn as drive/load/params.py draws them: from the user's parameter
 * stream (UserRandom(seed, user, 1)), in the transaction's order, every parameter of every
 * transaction (so the stream stays the Python path's whether or not a value is sent), and a
 * sequence's counter shared by every user of the transaction (itertools.count).
 *
 * A draw is a number (random_int, sequence) or the index of a value (choice, constant); its text
 * is made only where it is sent, in the encoding its place needs: the request's head (str() as
 * Latin-1), a body or a PostgreSQL parameter (str() as UTF-8), inside a JSON string (escaped),
 * or a whole JSON value. A value's texts are made once, in Python (native_http.py). */
#ifndef PERFLAB_PARAMS_H
#define PERFLAB_PARAMS_H

#include <stddef.h>
#include <stdint.h>

enum { P_RANDOM_INT = 0, P_CHOICE = 1, P_WEIGHTED = 2, P_SEQUENCE = 3, P_CONSTANT = 4 };
enum { ENC_HEAD = 0, ENC_TEXT = 1, ENC_JSON_STR = 2, ENC_JSON = 3, N_ENC = 4 };

typedef struct {
    int kind;
    int64_t a, b;       /* random_int: low, high; sequence: the next value, the step */
    int n_values;
    char **texts;       /* choice, constant: value v's text in encoding e at [v * N_ENC + e] (NULL: none) */
    uint32_t *lens;
    double *cumulative; /* a weighted choice's cumulative weights */
} param_t;

typedef int64_t drawn_t;

/* Draw n parameters in order from the stream *prng into out[0:n]. */
void params_draw(param_t *params, int n, uint64_t *prng, drawn_t *out);

/* The text of a drawn value in an encoding: points into the value's texts, or into `number`
 * (a drawn number's decimal digits, the same in every encoding). -1: the value has no text in
 * that encoding (native_http.py sends such a workload on the Python path). */
int param_text(const param_t *p, drawn_t d, int enc, char number[24], const char **text, size_t *len);

void params_free(param_t *params, int n);

#endif
