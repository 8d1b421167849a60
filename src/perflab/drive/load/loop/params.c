/* Parameters drawn as params.py draws them (params.h). */
#include "params.h"

#include <stdio.h>
#include <stdlib.h>

#include "rng.h"

void params_draw(param_t *params, int n, uint64_t *prng, drawn_t *out) {
    for (int i = 0; i < n; i++) {
        param_t *p = &params[i];
        switch (p->kind) {
        case P_RANDOM_INT: /* low + int(random() * (high - low + 1)); the range is below 2^53 (native_http.py) */
            out[i] = p->a + (int64_t)(rng_random(prng) * (double)(p->b - p->a + 1));
            break;
        case P_SEQUENCE:
            out[i] = p->a;
            p->a += p->b;
            break;
        case P_CHOICE:
            out[i] = (int64_t)(rng_random(prng) * (double)p->n_values);
            break;
        case P_WEIGHTED:
            out[i] = rng_pick(prng, p->cumulative, p->n_values);
            break;
        default: /* P_CONSTANT: no draw */
            out[i] = 0;
        }
    }
}

int param_text(const param_t *p, drawn_t d, int enc, char number[24], const char **text, size_t *len) {
    if (p->kind == P_RANDOM_INT || p->kind == P_SEQUENCE) {
        *len = (size_t)snprintf(number, 24, "%lld", (long long)d);
        *text = number;
        return 0;
    }
    const char *t = p->texts[d * N_ENC + enc];
    if (t == NULL)
        return -1;
    *text = t;
    *len = p->lens[d * N_ENC + enc];
    return 0;
}

void params_free(param_t *params, int n) {
    for (int i = 0; params != NULL && i < n; i++) {
        param_t *p = &params[i];
        for (int v = 0; p->texts != NULL && v < p->n_values * N_ENC; v++)
            free(p->texts[v]);
        free(p->texts);
        free(p->lens);
        free(p->cumulative);
    }
    free(params);
}
