/* The compiled kernel of burnpack/view/stats.py: a chunk's counts, extremes, sum and squared
 * deviations in one pass over its bytes; its histogram counts in a second.
 *
 * Optional: stats.py uses numpy when this module is not built. Each function takes a chunk's bytes
 * (any object with the buffer protocol, read in place, at any alignment) and a kind saying how to
 * read a value:
 *
 *   "f4" "f8" "i4" "i8" "u4" "u8"   native float32, float64, int32, int64, uint32, uint64;
 *   "t1" "t2"                       a 1- or 2-byte code looked up in ``table`` (256 or 65536 float64
 *                                   values numpy computed: float16, bfloat16, 8/16-bit integers, bool).
 *
 * Every value is read as the float64 numpy's astype(float64) gives. Sums are float64, pairwise:
 * 128-value blocks summed in 4 (16 with AVX2) lanes, the blocks' sums in a cascade. ``simd``: the
 * float32 kernels use AVX2 where the processor has it (``HAVE_AVX2``); chosen per call, so that no
 * call changes what another one runs.
 *
 * moments(data, kind, table, simd) -> (finite, zeros, nan, posinf, neginf, min, max, sum, m2)
 *     counts, and over the finite values: min, max (inf and -inf when there are none), sum, and
 *     the sum of squared deviations from their mean: each 128-value block's own two-pass sum
 *     (the block read again from the first-level cache), merged exactly as Chan et al. merge
 *     moments (``m2 = sum of block m2 + sum of n_b (mean_b - mean)**2``).
 * histogram(data, kind, table, low, high, scale, margin, edges, counts, simd) -> counted
 *     adds to ``counts`` (int64, len(edges) - 1 bins) the bins of the chunk's values in
 *     [low, high] exactly as numpy.histogram(values, bins, range=(low, high)) assigns them, and
 *     returns how many it counted: a value outside the range (NaN, an infinity, or a value that
 *     changed since the first pass measured low and high) is not counted, as numpy does not count
 *     it. ``edges`` must be the range's bins + 1 finite, increasing edges from low to high (copied
 *     and checked before any value is read). A value whose position ``(v - low) * scale`` lies
 *     farther than ``margin`` from every inner edge index is in bin floor(position); a nearer one
 *     (every value when margin is not below 0.25) is binned by numpy's own formula and comparisons
 *     with the edges. stats.py derives the margin for the precision the position is computed in
 *     (see its _Binning): float32 for "f4" with AVX2, float64 otherwise.
 *
 * The bytes may change while they are read (a mapped file rewritten by another process; the GIL is
 * released): each value is loaded once, every check on it is made on that load, and an index is
 * made from it only when it is proven inside the counts. A changed value changes what is counted,
 * never where a count is written.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    Py_ssize_t finite, zeros, nan, posinf, neginf;
    double min, max, sum, m2;
} Moments;

typedef struct {
    double low, high, width, scale, margin; /* width = high - low: finite and positive */
    const double *edges;                    /* bins + 1, the kernel's own copy */
    Py_ssize_t bins;
    int exact;
} Binning;

#define BLOCK 128
#define LEVELS 64
#define SEGMENT_BLOCKS 512 /* blocks whose count and mean are kept at a time (8 KiB) */

/* Pairwise summation of block sums: a binary counter of partial sums of 2**k blocks each. */
typedef struct {
    double partial[LEVELS];
    unsigned long long count;
} Cascade;

static void cascade_add(Cascade *c, double block) {
    int level = 0;
    unsigned long long k = c->count++;
    while (k & 1) {
        block += c->partial[level];
        k >>= 1;
        level++;
    }
    c->partial[level] = block;
}

static double cascade_total(const Cascade *c) {
    double total = 0.0;
    for (int level = 0; level < LEVELS; level++)
        if ((c->count >> level) & 1) total += c->partial[level];
    return total;
}

/* Squared deviations merged a segment of blocks at a time: each block's finite count, mean and
 * own m2; at the segment's end, the blocks' deviations from the segment's mean, and the segment
 * merged into the chunk's (n, mean, m2) with Chan's formula. */
typedef struct {
    Py_ssize_t count[SEGMENT_BLOCKS], n, blocks, total_n;
    double mean[SEGMENT_BLOCKS], m2, total_mean, total_m2;
    Cascade sum;
} Deviations;

static void deviations_init(Deviations *d) { /* the arrays are written before they are read */
    d->n = d->blocks = d->total_n = 0;
    d->m2 = d->total_mean = d->total_m2 = 0.0;
    d->sum.count = 0;
}

static void deviations_flush(Deviations *d) {
    if (d->n > 0) {
        double mean = cascade_total(&d->sum) / (double)d->n, m2 = d->m2;
        for (Py_ssize_t k = 0; k < d->blocks; k++) {
            double delta = d->mean[k] - mean;
            m2 += (double)d->count[k] * delta * delta;
        }
        Py_ssize_t total = d->total_n + d->n;
        double delta = mean - d->total_mean;
        d->total_mean += delta * (double)d->n / (double)total;
        d->total_m2 += m2 + delta * delta * ((double)d->total_n * (double)d->n / (double)total);
        d->total_n = total;
    }
    d->n = d->blocks = 0;
    d->m2 = 0.0;
    d->sum.count = 0;
}

/* A block of n finite values (none: nothing to add) with this sum and the squared deviations from
 * its mean. */
static void deviations_add(Deviations *d, Py_ssize_t n, double sum, double m2) {
    if (n == 0) return;
    if (d->blocks == SEGMENT_BLOCKS) deviations_flush(d);
    d->count[d->blocks] = n;
    d->mean[d->blocks++] = sum / (double)n;
    d->n += n;
    d->m2 += m2;
    cascade_add(&d->sum, sum);
}

/* rd_K(p, i, table): value i of a chunk as a float64. */
#define READER(K, T)                                                                                \
    static inline double rd_##K(const char *p, Py_ssize_t i, const double *t) {                    \
        T v;                                                                                        \
        (void)t;                                                                                    \
        memcpy(&v, p + (Py_ssize_t)sizeof(T) * i, sizeof(T));                                      \
        return (double)v;                                                                           \
    }
READER(f4, float)
READER(f8, double)
READER(i4, int32_t)
READER(i8, int64_t)
READER(u4, uint32_t)
READER(u8, uint64_t)
static inline double rd_t1(const char *p, Py_ssize_t i, const double *t) {
    return t[((const unsigned char *)p)[i]];
}
static inline double rd_t2(const char *p, Py_ssize_t i, const double *t) {
    uint16_t v;
    memcpy(&v, p + 2 * i, 2);
    return t[v];
}

/* A value is finite when v - v is 0 (NaN and +-inf give NaN). */
#define FINITE(v) ((v) - (v) == 0.0)

/* A value numpy.histogram counts: inside [low, high] (false for NaN). */
#define IN_RANGE(v, b) ((v) >= (b)->low && (v) <= (b)->high)

/* numpy.histogram's bin of a value v in [low, high] (numpy/lib/_histograms_impl.py): v - low lies
 * in [0, width] (rounding is monotonic), so f lies in [0, bins]; the comparisons keep the index
 * in [0, bins - 1] whatever they find. */
static inline Py_ssize_t numpy_bin(double v, const Binning *b) {
    double f = ((v - b->low) / b->width) * (double)b->bins;
    Py_ssize_t index = f >= 0.0 && f < (double)b->bins ? (Py_ssize_t)f : f > 0.0 ? b->bins - 1 : 0;
    if (v < b->edges[index]) {
        if (index > 0) index--;
    } else if (index < b->bins - 1 && v >= b->edges[index + 1]) {
        index++;
    }
    return index;
}

/* The bin of a value in [low, high]: by its position unless that is within the margin of an inner
 * edge, or not proven inside [0, bins) (then as numpy bins it). */
static inline Py_ssize_t bin_of(double v, const Binning *b) {
    if (b->exact) return numpy_bin(v, b);
    double t = (v - b->low) * b->scale;
    if (!(t >= 0.0 && t < (double)b->bins)) return numpy_bin(v, b);
    Py_ssize_t j = (Py_ssize_t)(t + 0.5);
    if (j >= 1 && j < b->bins && fabs(t - (double)j) < b->margin) return numpy_bin(v, b);
    return (Py_ssize_t)t;
}

#define DEFINE_KERNELS(K)                                                                           \
    /* Block by block: counts, extremes and sum, then the block's squared deviations. */           \
    static void moments_##K(const char *p, Py_ssize_t n, const double *table, Moments *m) {        \
        Cascade sums = {{0}, 0};                                                                    \
        Deviations dev;                                                                             \
        double lo = INFINITY, hi = -INFINITY;                                                       \
        Py_ssize_t finite = 0, zeros = 0, nan = 0, posinf = 0, neginf = 0;                          \
        deviations_init(&dev);                                                                \
        for (Py_ssize_t start = 0; start < n; start += BLOCK) {                                     \
            Py_ssize_t end = start + BLOCK < n ? start + BLOCK : n, i = start, fin = 0;             \
            double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;                                          \
            for (; i + 4 <= end; i += 4) {                                                          \
                double a = rd_##K(p, i, table), b = rd_##K(p, i + 1, table);                        \
                double c = rd_##K(p, i + 2, table), d = rd_##K(p, i + 3, table);                    \
                if (!(FINITE(a) && FINITE(b) && FINITE(c) && FINITE(d)))                            \
                    break; /* a NaN or an infinity among the four: value by value below */         \
                double l0 = a < b ? a : b, l1 = c < d ? c : d, h0 = a < b ? b : a;                  \
                double h1 = c < d ? d : c;                                                          \
                l0 = l0 < l1 ? l0 : l1;                                                             \
                h0 = h0 < h1 ? h1 : h0;                                                             \
                lo = l0 < lo ? l0 : lo;                                                             \
                hi = h0 > hi ? h0 : hi;                                                             \
                zeros += (a == 0.0) + (b == 0.0) + (c == 0.0) + (d == 0.0);                         \
                s0 += a;                                                                            \
                s1 += b;                                                                            \
                s2 += c;                                                                            \
                s3 += d;                                                                            \
                fin += 4;                                                                           \
            }                                                                                       \
            for (; i < end; i++) {                                                                  \
                double v = rd_##K(p, i, table);                                                     \
                if (FINITE(v)) {                                                                    \
                    lo = v < lo ? v : lo;                                                           \
                    hi = v > hi ? v : hi;                                                           \
                    zeros += v == 0.0;                                                              \
                    s0 += v;                                                                        \
                    fin++;                                                                          \
                } else if (v != v) {                                                                \
                    nan++;                                                                          \
                } else if (v > 0) {                                                                 \
                    posinf++;                                                                       \
                } else {                                                                            \
                    neginf++;                                                                       \
                }                                                                                   \
            }                                                                                       \
            double sum = (s0 + s1) + (s2 + s3), q0 = 0.0, q1 = 0.0;                                 \
            cascade_add(&sums, sum);                                                                \
            finite += fin;                                                                          \
            if (fin == 0) continue;                                                                 \
            double mean = sum / (double)fin;                                                        \
            for (i = start; i < end; i++) {                                                         \
                double v = rd_##K(p, i, table);                                                     \
                if (!FINITE(v)) continue;                                                           \
                v -= mean;                                                                          \
                if (i & 1)                                                                          \
                    q1 += v * v;                                                                    \
                else                                                                                \
                    q0 += v * v;                                                                    \
            }                                                                                       \
            deviations_add(&dev, fin, sum, q0 + q1);                                                \
        }                                                                                           \
        deviations_flush(&dev);                                                                     \
        Moments out = {finite, zeros, nan, posinf, neginf, lo, hi, cascade_total(&sums), dev.total_m2}; \
        *m = out;                                                                                   \
    }                                                                                               \
                                                                                                    \
    static Py_ssize_t histogram_##K(const char *p, Py_ssize_t n, const double *table, const Binning *b, \
                                    int64_t *counts) {                                              \
        Py_ssize_t counted = 0;                                                                     \
        for (Py_ssize_t i = 0; i < n; i++) {                                                        \
            double v = rd_##K(p, i, table);                                                         \
            if (IN_RANGE(v, b)) {                                                                   \
                counts[bin_of(v, b)]++;                                                             \
                counted++;                                                                          \
            }                                                                                       \
        }                                                                                           \
        return counted;                                                                             \
    }

DEFINE_KERNELS(f4)
DEFINE_KERNELS(f8)
DEFINE_KERNELS(i4)
DEFINE_KERNELS(i8)
DEFINE_KERNELS(u4)
DEFINE_KERNELS(u8)
DEFINE_KERNELS(t1)
DEFINE_KERNELS(t2)

#if defined(__GNUC__) && defined(__x86_64__)
/* float32 with AVX2 (chosen at run time): 16 values a step in the first pass, 8 in the second. A
 * 128-value block holding a NaN or an infinity goes value by value through the kernels above. */
#include <immintrin.h>
#define AVX2 __attribute__((target("avx2,fma")))
#define PAIRED_BINS 64 /* pair histograms of at most 64 * 64 bins, four of them: 64 KiB */
#define PREFETCH 4096 /* bytes ahead: this far, both passes ran fastest from memory (hardware prefetch alone: 3x slower) */

AVX2 static double hsum_pd(__m256d v) {
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

/* Values by the portable kernel, added to the AVX2 kernel's running moments. */
static void moments_f4_part(const char *p, Py_ssize_t n, Moments *s, Cascade *sums, Deviations *dev) {
    Moments part;
    moments_f4(p, n, NULL, &part);
    s->zeros += part.zeros;
    s->nan += part.nan;
    s->posinf += part.posinf;
    s->neginf += part.neginf;
    s->min = part.min < s->min ? part.min : s->min;
    s->max = part.max > s->max ? part.max : s->max;
    s->finite += part.finite;
    cascade_add(sums, part.sum);
    deviations_add(dev, part.finite, part.sum, part.m2);
}

/* Eight float32 values from value i on (unaligned loads: the bytes may sit at any address). */
AVX2 static inline __m256 load8(const char *p, Py_ssize_t i) { return _mm256_loadu_ps((const float *)(p + 4 * i)); }

/* Prefetch PREFETCH bytes past value i: an address, computed as an integer (never a pointer past
 * the buffer); a prefetch cannot fault. */
#define PREFETCH_AHEAD(p, i) _mm_prefetch((const char *)((uintptr_t)((p) + 4 * (i)) + PREFETCH), _MM_HINT_T0)

AVX2 static void moments_f4_avx2(const char *p, Py_ssize_t n, const double *table, Moments *m) {
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)), inf = _mm256_set1_ps(INFINITY);
    const __m256 zero = _mm256_setzero_ps();
    __m256 lo = _mm256_set1_ps(INFINITY), hi = _mm256_set1_ps(-INFINITY);
    __m256i zeros = _mm256_setzero_si256();
    Cascade sums = {{0}, 0};
    Deviations dev;
    Moments s = {0, 0, 0, 0, 0, INFINITY, -INFINITY, 0.0, 0.0};
    Py_ssize_t start = 0, fast = 0;
    (void)table;
    deviations_init(&dev);
    for (; start + BLOCK <= n; start += BLOCK) {
        __m256 blo = lo, bhi = hi, ok = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
        __m256i bz = zeros;
        __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
        for (Py_ssize_t i = start; i < start + BLOCK; i += 16) {
            __m256 a = load8(p, i), b = load8(p, i + 8);
            PREFETCH_AHEAD(p, i);
            ok = _mm256_and_ps(ok, _mm256_cmp_ps(_mm256_and_ps(a, absmask), inf, _CMP_LT_OQ));
            ok = _mm256_and_ps(ok, _mm256_cmp_ps(_mm256_and_ps(b, absmask), inf, _CMP_LT_OQ));
            blo = _mm256_min_ps(blo, _mm256_min_ps(a, b));
            bhi = _mm256_max_ps(bhi, _mm256_max_ps(a, b));
            bz = _mm256_sub_epi32(bz, _mm256_castps_si256(_mm256_cmp_ps(a, zero, _CMP_EQ_OQ)));
            bz = _mm256_sub_epi32(bz, _mm256_castps_si256(_mm256_cmp_ps(b, zero, _CMP_EQ_OQ)));
            s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(a)));
            s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1)));
            s2 = _mm256_add_pd(s2, _mm256_cvtps_pd(_mm256_castps256_ps128(b)));
            s3 = _mm256_add_pd(s3, _mm256_cvtps_pd(_mm256_extractf128_ps(b, 1)));
        }
        if (_mm256_movemask_ps(ok) != 0xff) { /* a NaN or an infinity: the block value by value */
            moments_f4_part(p + 4 * start, BLOCK, &s, &sums, &dev);
            continue;
        }
        lo = blo;
        hi = bhi;
        zeros = bz;
        double sum = hsum_pd(_mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3)));
        const __m256d mean = _mm256_set1_pd(sum / BLOCK);
        __m256d q0 = _mm256_setzero_pd(), q1 = q0, q2 = q0, q3 = q0;
        /* Again, from the first-level cache. Values changed since the loop above only change the
         * squared deviations (a NaN among them makes them NaN: stats.py then sums them anew). */
        for (Py_ssize_t i = start; i < start + BLOCK; i += 16) {
            __m256 a = load8(p, i), b = load8(p, i + 8);
            __m256d d0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(a)), mean);
            __m256d d1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(a, 1)), mean);
            __m256d d2 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(b)), mean);
            __m256d d3 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(b, 1)), mean);
            q0 = _mm256_fmadd_pd(d0, d0, q0);
            q1 = _mm256_fmadd_pd(d1, d1, q1);
            q2 = _mm256_fmadd_pd(d2, d2, q2);
            q3 = _mm256_fmadd_pd(d3, d3, q3);
        }
        cascade_add(&sums, sum);
        s.finite += BLOCK;
        deviations_add(&dev, BLOCK, sum, hsum_pd(_mm256_add_pd(_mm256_add_pd(q0, q1), _mm256_add_pd(q2, q3))));
        if (++fast % (1 << 23) == 0) { /* the 32-bit zero counts (at most 2**28 a lane by now) */
            int32_t z[8];
            _mm256_storeu_si256((__m256i *)z, zeros);
            for (int k = 0; k < 8; k++) s.zeros += z[k];
            zeros = _mm256_setzero_si256();
        }
    }
    if (start < n) moments_f4_part(p + 4 * start, n - start, &s, &sums, &dev);
    float l[8], h[8];
    int32_t z[8];
    _mm256_storeu_ps(l, lo);
    _mm256_storeu_ps(h, hi);
    _mm256_storeu_si256((__m256i *)z, zeros);
    for (int k = 0; k < 8; k++) {
        s.min = l[k] < s.min ? l[k] : s.min;
        s.max = h[k] > s.max ? h[k] : s.max;
        s.zeros += z[k];
    }
    s.sum = cascade_total(&sums);
    deviations_flush(&dev);
    s.m2 = dev.total_m2;
    *m = s;
}

AVX2 static Py_ssize_t histogram_f4_avx2(const char *p, Py_ssize_t n, const double *table, const Binning *b,
                                         int64_t *counts) {
    /* Positions in float32, as stats.py's numpy path computes them for float32 (the margin is its).
     * Counted a pair of neighbouring values at a time (``bins`` ** 2 pair bins, four histograms so
     * that no increment waits for the one before); a step of 8 values of which one is outside the
     * range (NaN, an infinity, a value changed since the first pass) goes value by value. The
     * range is compared in float32, so it must be float32 values (stats.py's are: the extremes of
     * float32 values), and the scale one float32 can hold. */
    const Py_ssize_t bins = b->bins;
    if (b->exact || bins > PAIRED_BINS || !(fabs(b->low) <= FLT_MAX && fabs(b->high) <= FLT_MAX && b->scale <= FLT_MAX) ||
        (double)(float)b->low != b->low || (double)(float)b->high != b->high)
        return histogram_f4(p, n, table, b, counts);
    const Py_ssize_t size = bins * bins;
    uint32_t *local = malloc(4 * (size_t)size * sizeof(uint32_t));
    if (local == NULL) return histogram_f4(p, n, table, b, counts);
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)), zero = _mm256_setzero_ps();
    const __m256 low = _mm256_set1_ps((float)b->low), high = _mm256_set1_ps((float)b->high);
    const __m256 scale = _mm256_set1_ps((float)b->scale), margin = _mm256_set1_ps((float)b->margin);
    const __m256 top = _mm256_set1_ps((float)((double)bins - 0.5));
    const __m256i width = _mm256_set1_epi32((int)bins);
    int32_t index[8];
    float values[8];
    Py_ssize_t i = 0, counted = 0;
    while (i + 8 <= n) {
        /* at most 2**31 values a round: no uint32 count overflows */
        Py_ssize_t end = n - i > ((Py_ssize_t)1 << 31) ? i + ((Py_ssize_t)1 << 31) : n;
        memset(local, 0, 4 * (size_t)size * sizeof(uint32_t));
        for (; i + 8 <= end; i += 8) {
            __m256 a = load8(p, i);
            PREFETCH_AHEAD(p, i);
            __m256 inside = _mm256_and_ps(_mm256_cmp_ps(a, low, _CMP_GE_OQ), _mm256_cmp_ps(a, high, _CMP_LE_OQ));
            if (_mm256_movemask_ps(inside) != 0xff) {
                counted += histogram_f4(p + 4 * i, 8, table, b, counts);
                continue;
            }
            __m256 t = _mm256_mul_ps(_mm256_sub_ps(a, low), scale);
            __m256 j = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            /* within the margin of any edge, the outer ones too (few values: the extremes) */
            int near = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(_mm256_sub_ps(t, j), absmask), margin, _CMP_LT_OQ));
            /* clamped into [0, bins - 1] before the conversion (max and min give 0 for a NaN) */
            __m256i idx = _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(t, zero), top));
            if (near) { /* rare: values within rounding distance of an edge, placed as numpy places them */
                _mm256_storeu_si256((__m256i *)index, idx);
                _mm256_storeu_ps(values, a); /* the values checked above, not the buffer read again */
                while (near) {
                    int k = __builtin_ctz(near);
                    index[k] = (int32_t)numpy_bin((double)values[k], b);
                    near &= near - 1;
                }
                idx = _mm256_loadu_si256((const __m256i *)index);
            }
            /* the low half of each 64-bit lane: index[2k] * bins + index[2k + 1] */
            __m256i pair = _mm256_add_epi32(_mm256_mullo_epi32(idx, width), _mm256_srli_epi64(idx, 32));
            __m128i low2 = _mm256_castsi256_si128(pair), high2 = _mm256_extracti128_si256(pair, 1);
            local[(uint32_t)_mm_cvtsi128_si64(low2)]++;
            local[size + (uint32_t)_mm_extract_epi64(low2, 1)]++;
            local[2 * size + (uint32_t)_mm_cvtsi128_si64(high2)]++;
            local[3 * size + (uint32_t)_mm_extract_epi64(high2, 1)]++;
            counted += 8;
        }
        for (Py_ssize_t first = 0; first < bins; first++)
            for (Py_ssize_t second = 0; second < bins; second++) {
                Py_ssize_t at = first * bins + second;
                int64_t c = (int64_t)local[at] + local[size + at] + local[2 * size + at] + local[3 * size + at];
                counts[first] += c;
                counts[second] += c;
            }
    }
    free(local);
    return counted + histogram_f4(p + 4 * i, n - i, table, b, counts);
}

static int have_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#else
#define moments_f4_avx2 moments_f4
#define histogram_f4_avx2 histogram_f4
static int have_avx2(void) { return 0; }
#endif

typedef void (*MomentsFn)(const char *, Py_ssize_t, const double *, Moments *);
typedef Py_ssize_t (*HistogramFn)(const char *, Py_ssize_t, const double *, const Binning *, int64_t *);

typedef struct {
    const char *name;
    Py_ssize_t itemsize, table_size;
    MomentsFn moments, moments_simd;
    HistogramFn histogram, histogram_simd;
} Kind;

static const Kind KINDS[] = {
    {"f4", 4, 0, moments_f4, moments_f4_avx2, histogram_f4, histogram_f4_avx2},
    {"f8", 8, 0, moments_f8, moments_f8, histogram_f8, histogram_f8},
    {"i4", 4, 0, moments_i4, moments_i4, histogram_i4, histogram_i4},
    {"i8", 8, 0, moments_i8, moments_i8, histogram_i8, histogram_i8},
    {"u4", 4, 0, moments_u4, moments_u4, histogram_u4, histogram_u4},
    {"u8", 8, 0, moments_u8, moments_u8, histogram_u8, histogram_u8},
    {"t1", 1, 256, moments_t1, moments_t1, histogram_t1, histogram_t1},
    {"t2", 2, 65536, moments_t2, moments_t2, histogram_t2, histogram_t2},
};

static int HAVE_AVX2; /* set once, when the module is imported */

/* Whether a buffer's memory is aligned for a type of ``size`` bytes: a caller's table or counts
 * are read and written as float64 and int64 only when they are. */
static int aligned(const Py_buffer *view, size_t size, const char *what) {
    if ((uintptr_t)view->buf % size == 0) return 1;
    PyErr_Format(PyExc_ValueError, "the %s buffer is not %zu-byte aligned", what, size);
    return 0;
}

/* The kind named ``name`` and, when it reads codes, its table (held in *table_view). */
static const Kind *lookup(const char *name, PyObject *table, Py_buffer *table_view) {
    const Kind *kind = NULL;
    for (size_t k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++)
        if (strcmp(KINDS[k].name, name) == 0) kind = &KINDS[k];
    table_view->obj = NULL;
    if (kind == NULL) {
        PyErr_Format(PyExc_ValueError, "unknown value kind '%s'", name);
        return NULL;
    }
    if (kind->table_size == 0) {
        if (table != Py_None) {
            PyErr_Format(PyExc_ValueError, "kind %s takes no table", name);
            return NULL;
        }
        return kind;
    }
    if (PyObject_GetBuffer(table, table_view, PyBUF_SIMPLE) < 0) {
        table_view->obj = NULL;
        return NULL;
    }
    if (table_view->len != kind->table_size * (Py_ssize_t)sizeof(double) || !aligned(table_view, sizeof(double), "table")) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "kind %s needs a table of %zd float64 values, got %zd bytes", name,
                         kind->table_size, table_view->len);
        PyBuffer_Release(table_view);
        table_view->obj = NULL;
        return NULL;
    }
    return kind;
}

static int values_of(PyObject *data, const Kind *kind, Py_buffer *view) {
    view->obj = NULL;
    if (PyObject_GetBuffer(data, view, PyBUF_SIMPLE) < 0) {
        view->obj = NULL;
        return -1;
    }
    if (view->len % kind->itemsize != 0) {
        PyErr_Format(PyExc_ValueError, "%zd bytes are not a whole number of %zd-byte values", view->len,
                     kind->itemsize);
        PyBuffer_Release(view);
        view->obj = NULL;
        return -1;
    }
    return 0;
}

static void release(Py_buffer *view) {
    if (view->obj != NULL) PyBuffer_Release(view);
}

static PyObject *moments(PyObject *self, PyObject *args) {
    PyObject *data, *table;
    const char *name;
    int simd;
    Py_buffer values, table_view;
    Moments m;
    (void)self;
    if (!PyArg_ParseTuple(args, "OsOp:moments", &data, &name, &table, &simd)) return NULL;
    const Kind *kind = lookup(name, table, &table_view);
    if (kind == NULL) return NULL;
    if (values_of(data, kind, &values) < 0) {
        release(&table_view);
        return NULL;
    }
    MomentsFn run = simd && HAVE_AVX2 ? kind->moments_simd : kind->moments; /* chosen here, for this call only */
    const char *p = values.buf;
    const double *t = table_view.obj ? table_view.buf : NULL;
    Py_ssize_t n = values.len / kind->itemsize;
    Py_BEGIN_ALLOW_THREADS
    run(p, n, t, &m);
    Py_END_ALLOW_THREADS
    release(&values);
    release(&table_view);
    return Py_BuildValue("nnnnndddd", m.finite, m.zeros, m.nan, m.posinf, m.neginf, m.min, m.max, m.sum, m.m2);
}

/* The edges, copied: bins + 1 finite values, strictly increasing, from low to high. */
static double *edges_of(PyObject *obj, const Binning *b, Py_ssize_t *bins) {
    Py_buffer view;
    double *copy = NULL;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0) return NULL;
    *bins = view.len / (Py_ssize_t)sizeof(double) - 1;
    if (*bins < 1 || view.len % (Py_ssize_t)sizeof(double) != 0) {
        PyErr_SetString(PyExc_ValueError, "need bins + 1 float64 edges");
        goto done;
    }
    copy = PyMem_Malloc((size_t)view.len);
    if (copy == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(copy, view.buf, (size_t)view.len);
    int ok = copy[0] == b->low && copy[*bins] == b->high;
    for (Py_ssize_t k = 0; ok && k < *bins; k++) ok = copy[k] < copy[k + 1]; /* false for a NaN */
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "the edges must increase from low to high");
        PyMem_Free(copy);
        copy = NULL;
    }
done:
    PyBuffer_Release(&view);
    return copy;
}

static PyObject *histogram(PyObject *self, PyObject *args) {
    PyObject *data, *table, *edges_obj, *counts_obj, *result = NULL;
    const char *name;
    int simd;
    Py_buffer values, table_view, counts;
    Binning b;
    double *edges = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "OsOddddOOp:histogram", &data, &name, &table, &b.low, &b.high, &b.scale, &b.margin,
                          &edges_obj, &counts_obj, &simd))
        return NULL;
    b.width = b.high - b.low;
    if (!(isfinite(b.low) && isfinite(b.high) && b.low < b.high && isfinite(b.width))) {
        PyErr_SetString(PyExc_ValueError, "the histogram's range must be finite and increasing, and its width finite");
        return NULL;
    }
    const Kind *kind = lookup(name, table, &table_view);
    if (kind == NULL) return NULL;
    counts.obj = values.obj = NULL;
    edges = edges_of(edges_obj, &b, &b.bins);
    if (edges == NULL) goto done;
    b.edges = edges;
    if (PyObject_GetBuffer(counts_obj, &counts, PyBUF_WRITABLE) < 0) {
        counts.obj = NULL;
        goto done;
    }
    if (counts.len != b.bins * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "need bins + 1 float64 edges and bins int64 counts");
        goto done;
    }
    if (!aligned(&counts, sizeof(int64_t), "counts")) goto done;
    /* positions by the margin only for a finite, positive scale */
    b.exact = !(b.margin < 0.25) || !(b.scale > 0.0 && isfinite(b.scale));
    if (values_of(data, kind, &values) < 0) goto done;
    HistogramFn run = simd && HAVE_AVX2 ? kind->histogram_simd : kind->histogram; /* chosen here, for this call only */
    const char *p = values.buf;
    const double *t = table_view.obj ? table_view.buf : NULL;
    int64_t *out = counts.buf;
    Py_ssize_t n = values.len / kind->itemsize, counted;
    Py_BEGIN_ALLOW_THREADS
    counted = run(p, n, t, &b, out);
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(counted);
done:
    PyMem_Free(edges);
    release(&values);
    release(&counts);
    release(&table_view);
    return result;
}

static PyMethodDef methods[] = {
    {"moments", moments, METH_VARARGS, "moments(data, kind, table, simd): a chunk's counts, and its finite values' min, max, sum and m2."},
    {"histogram", histogram, METH_VARARGS,
     "histogram(data, kind, table, low, high, scale, margin, edges, counts, simd) -> counted: add the numpy.histogram "
     "bins of a chunk's values in [low, high] to counts."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_cstats", "Compiled moments and histogram counts of burnpack view's statistics.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__cstats(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    HAVE_AVX2 = have_avx2();
    if (PyModule_AddIntConstant(m, "HAVE_AVX2", HAVE_AVX2) < 0 || PyModule_AddIntConstant(m, "INTERFACE", 2) < 0) Py_CLEAR(m);
    return m;
}
