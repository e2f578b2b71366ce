/* The compiled kernel of ``burnpack.quant.dequantize``: a QFloat tensor's sub-byte integer values
 * unpacked, sign-extended and multiplied by their block's scale, written as float32 in one pass.
 * (8-bit values need no unpacking: numpy's single multiply meets the target there, so they take
 * numpy; docs/kernels.md.)
 *
 *     dequantize(values, bits, outer, rows, cols, block_rows, block_cols, scales, out)
 *
 * The tensor is seen as ``outer`` matrices of ``rows`` x ``cols`` values (quant.py folds the
 * leading axes, on which a covered block is 1, into ``outer``); each matrix is tiled by blocks of
 * ``block_rows`` x ``block_cols`` (the last ones partial), so ``scales`` holds
 * ``outer * ceil(rows / block_rows) * ceil(cols / block_cols)`` native float32 values, row-major.
 * ``values`` holds, per row, the LSB-first ``bits``-wide fields (2 or 4) of little-endian u32
 * words (``PackedU32(0)``, each row padded to whole words). ``out`` (writable, float32-aligned)
 * receives ``outer * rows * cols`` float32.
 *
 * Each value is ``(float)q * s``: one float32 multiply of the exact int, as numpy's
 * ``np.multiply(int8, float32)`` computes it, so the results are bit-identical (NaN and infinite
 * scales included). Plain C; the compiler vectorizes the loops at the build's -O level.
 * Bad arguments (wrong sizes, an output overlapping the inputs, a read-only or misaligned output)
 * raise ValueError or TypeError before anything is written.
 *
 * The values and scales may sit at any alignment (read bytewise and with memcpy) and may change
 * while they are read (a mapped file; the GIL is released): every offset comes from the sizes
 * checked above, never from the bytes, so a changed byte changes a value, never where one is
 * read or written.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define CHUNK 4096 /* values unpacked into int8 at a time: a multiple of 16, cache-sized */

/* Every byte's fields, sign-extended: two int8 per byte for Q4, four for Q2, looked up (one load and
 * one store a byte). A field f of ``bits`` bits is ``(f ^ h) - h``, h = 1 << (bits - 1): the same
 * value as Burn's ``((raw << (8 - bits)) as i8) >> (8 - bits)``. Filled once, at import. */
static int8_t Q4_FIELDS[256][2];
static int8_t Q2_FIELDS[256][4];

static void fill_tables(void) {
    for (int v = 0; v < 256; v++) {
        for (int k = 0; k < 2; k++) Q4_FIELDS[v][k] = (int8_t)((((v >> (4 * k)) & 15) ^ 8) - 8);
        for (int k = 0; k < 4; k++) Q2_FIELDS[v][k] = (int8_t)((((v >> (2 * k)) & 3) ^ 2) - 2);
    }
}

static void unpack(const uint8_t *src, int bits, Py_ssize_t start, Py_ssize_t n, int8_t *dst) {
    /* ``start`` is a multiple of CHUNK, so every field width starts on a byte; the last byte's
     * fields past ``n`` land in the slack of ``dst`` (4 bytes past CHUNK). */
    if (bits == 4) {
        const uint8_t *b = src + start / 2;
        Py_ssize_t bytes = (n + 1) / 2;
        for (Py_ssize_t i = 0; i < bytes; i++) memcpy(dst + 2 * i, Q4_FIELDS[b[i]], 2);
    } else { /* bits == 2 */
        const uint8_t *b = src + start / 4;
        Py_ssize_t bytes = (n + 3) / 4;
        for (Py_ssize_t i = 0; i < bytes; i++) memcpy(dst + 4 * i, Q2_FIELDS[b[i]], 4);
    }
}

static void scale_span(const int8_t *restrict q, Py_ssize_t n, float s, float *restrict dst) {
    for (Py_ssize_t j = 0; j < n; j++) dst[j] = (float)q[j] * s;
}

typedef struct {
    const uint8_t *values;
    const char *scales;
    float *out;
    int bits;
    Py_ssize_t outer, rows, cols, block_rows, block_cols, row_bytes, grid_rows, grid_cols;
} Job;

static void run(const Job *job) {
    int8_t tmp[CHUNK + 4];
    for (Py_ssize_t o = 0; o < job->outer; o++) {
        for (Py_ssize_t r = 0; r < job->rows; r++) {
            Py_ssize_t row = o * job->rows + r;
            const uint8_t *src = job->values + row * job->row_bytes;
            float *dst = job->out + row * job->cols;
            const char *srow = job->scales + ((o * job->grid_rows + r / job->block_rows) * job->grid_cols) * (Py_ssize_t)sizeof(float);
            for (Py_ssize_t c0 = 0; c0 < job->cols; c0 += CHUNK) {
                Py_ssize_t n = job->cols - c0 < CHUNK ? job->cols - c0 : CHUNK;
                const int8_t *q = tmp;
                unpack(src, job->bits, c0, n, tmp);
                Py_ssize_t block = c0 / job->block_cols, end = (block + 1) * job->block_cols - c0;
                for (Py_ssize_t j = 0; j < n; block++, end += job->block_cols) {
                    Py_ssize_t stop = end < n ? end : n;
                    float s;
                    memcpy(&s, srow + block * (Py_ssize_t)sizeof(float), sizeof s);
                    scale_span(q + j, stop - j, s, dst + c0 + j);
                    j = stop;
                }
            }
        }
    }
}

/* a * b of two sizes checked non-negative above, refused where it overflows (portable C: MSVC has no
 * __builtin_mul_overflow). */
static int product(Py_ssize_t a, Py_ssize_t b, Py_ssize_t *out) {
    if (a < 0 || b < 0 || (a != 0 && b > PY_SSIZE_T_MAX / a)) {
        PyErr_SetString(PyExc_ValueError, "dequantize: the sizes overflow");
        return -1;
    }
    *out = a * b;
    return 0;
}

static int overlap(const Py_buffer *a, const Py_buffer *b) {
    uintptr_t a0 = (uintptr_t)a->buf, b0 = (uintptr_t)b->buf;
    return a->len > 0 && b->len > 0 && a0 < b0 + (uintptr_t)b->len && b0 < a0 + (uintptr_t)a->len;
}

static PyObject *dequantize(PyObject *self, PyObject *args) {
    Py_buffer values, scales, out;
    Job job;
    if (!PyArg_ParseTuple(args, "y*innnnny*w*:dequantize", &values, &job.bits, &job.outer, &job.rows, &job.cols,
                          &job.block_rows, &job.block_cols, &scales, &out))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t per_word, words, count, cells, scale_bytes, value_bytes, out_bytes;
    if (job.bits != 2 && job.bits != 4) {
        PyErr_Format(PyExc_ValueError, "dequantize: bits must be 2 or 4, got %d", job.bits);
        goto done;
    }
    if (job.outer < 0 || job.rows < 0 || job.cols < 0 || job.block_rows < 1 || job.block_cols < 1) {
        PyErr_SetString(PyExc_ValueError, "dequantize: sizes must be non-negative and block extents at least 1");
        goto done;
    }
    per_word = 32 / job.bits;
    words = job.cols / per_word + (job.cols % per_word != 0);
    job.row_bytes = words * 4;
    job.grid_rows = job.rows / job.block_rows + (job.rows % job.block_rows != 0);
    job.grid_cols = job.cols / job.block_cols + (job.cols % job.block_cols != 0);
    if (product(job.outer, job.rows, &count) < 0 || product(count, job.row_bytes, &value_bytes) < 0 ||
        product(job.outer, job.grid_rows, &cells) < 0 || product(cells, job.grid_cols, &cells) < 0 ||
        product(cells, (Py_ssize_t)sizeof(float), &scale_bytes) < 0 || product(count, job.cols, &count) < 0 ||
        product(count, (Py_ssize_t)sizeof(float), &out_bytes) < 0)
        goto done;
    if (values.len != value_bytes || scales.len != scale_bytes || out.len != out_bytes) {
        PyErr_Format(PyExc_ValueError, "dequantize: buffers of %zd value, %zd scale and %zd output bytes, expected %zd, %zd and %zd",
                     values.len, scales.len, out.len, value_bytes, scale_bytes, out_bytes);
        goto done;
    }
    if (overlap(&out, &values) || overlap(&out, &scales)) {
        PyErr_SetString(PyExc_ValueError, "dequantize: the output buffer overlaps the values or the scales");
        goto done;
    }
    if ((uintptr_t)out.buf % sizeof(float) != 0) {
        PyErr_SetString(PyExc_ValueError, "dequantize: the output buffer is not float32-aligned");
        goto done;
    }
    job.values = values.buf;
    job.scales = scales.buf;
    job.out = out.buf;
    Py_BEGIN_ALLOW_THREADS
    run(&job);
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&values);
    PyBuffer_Release(&scales);
    PyBuffer_Release(&out);
    return result;
}

static PyMethodDef methods[] = {
    {"dequantize", dequantize, METH_VARARGS, "Unpack, sign-extend and scale a QFloat tensor's packed sub-byte values into a float32 buffer."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_cquant", "The compiled dequantize kernel of burnpack.quant.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__cquant(void) {
    fill_tables();
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "INTERFACE", 3) < 0) Py_CLEAR(m); /* _kernels.KERNELS */
    return m;
}
