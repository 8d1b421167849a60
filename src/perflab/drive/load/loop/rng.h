/* Each user's random streams and think times, as workload/rng.py and thinktime.py draw them, to
 * the bit: SplitMix64 (UserRandom), its uniform, normal, exponential and weighted pick, and the
 * four think-time distributions the compiled loop draws (tests/core/test_native_http_draws.py
 * compares them with the Python path's). Header-only: a few inline functions used everywhere. */
#ifndef PERFLAB_RNG_H
#define PERFLAB_RNG_H

#include <math.h>
#include <stdint.h>

#define RNG_GAMMA 0x9E3779B97F4A7C15ULL

static inline uint64_t rng_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* UserRandom(seed, stream, substream).state */
static inline uint64_t rng_init(uint64_t seed, uint64_t stream, uint64_t substream) {
    return rng_mix(rng_mix(seed) ^ rng_mix(stream * 0xD1B54A32D192ED03ULL + substream));
}

static inline double rng_random(uint64_t *state) {
    *state += RNG_GAMMA;
    return (double)(rng_mix(*state) >> 11) * (1.0 / 9007199254740992.0);
}

static inline double rng_normal(uint64_t *state) {
    double u1 = 1.0 - rng_random(state);
    double a = sqrt(-2.0 * log(u1));
    return a * cos(2.0 * M_PI * rng_random(state));
}

static inline double rng_exponential(uint64_t *state, double mean) {
    return -mean * log(1.0 - rng_random(state));
}

/* UserRandom.pick: an index drawn by cumulative weights (one choice: the draw taken, not mixed). */
static inline int rng_pick(uint64_t *state, const double *cumulative, int n) {
    if (n == 1) {
        *state += RNG_GAMMA;
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

enum { T_CONSTANT = 0, T_UNIFORM = 1, T_EXPONENTIAL = 2, T_LOGNORMAL = 3 };

typedef struct {
    int kind;
    double a, b, c; /* constant: a; uniform: a=low b=high; exponential: a=mean; lognormal: a=mu b=sigma c=mu+sigma^2 */
} think_t;

/* thinktime.py's sample() */
static inline double think_sample(const think_t *t, uint64_t *rng) {
    switch (t->kind) {
    case T_CONSTANT: return t->a;
    case T_UNIFORM: return t->a + (t->b - t->a) * rng_random(rng);
    case T_EXPONENTIAL: return rng_exponential(rng, t->a);
    default: return exp(t->a + t->b * rng_normal(rng));
    }
}

/* thinktime.py's sample_residual(): what is left of a think caught at a random moment */
static inline double think_residual(const think_t *t, uint64_t *rng) {
    double r;
    switch (t->kind) {
    case T_CONSTANT: return rng_random(rng) * t->a;
    case T_UNIFORM: {
        r = rng_random(rng);
        double low2 = t->a * t->a, high2 = t->b * t->b;
        return r * sqrt(low2 + rng_random(rng) * (high2 - low2));
    }
    case T_EXPONENTIAL: return rng_exponential(rng, t->a);
    default:
        r = rng_random(rng);
        return r * exp(t->c + t->b * rng_normal(rng));
    }
}

#endif
