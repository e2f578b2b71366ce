/* The compiled kernel of ``Decoder.skip`` (burnpack/codec/_cbor.py): ``skip_plain`` does exactly what
 * ``_cbor.skip_plain`` does, byte for byte, at the speed of scanning the bytes.
 *
 *     skip_plain(buf, pos, end, depth, scratch, stack) -> (pos, depth, done)
 *
 * While the innermost open container (the last entry of ``stack``: a count of items still to come,
 * or a negative marker of an indefinite container) is definite, consume the tokens serde's
 * IgnoredAny cannot fail on: integers, floats, false/true/null/undefined, definite strings up to
 * ``scratch`` bytes (text valid UTF-8, as Python's strict codec and Rust's from_utf8 judge it),
 * definite arrays and maps while ``depth`` allows one more level, tags other than bignums. Stop at
 * the first token that needs the careful path, leaving ``stack`` (updated in place), ``pos`` and
 * ``depth`` where that path reads on. ``done`` is true when the outermost item completed.
 *
 * Counts go up to 2 * (2^64 - 1) (a map's keys and values), so they are held as 128-bit integers.
 * Only the stack entries the walk reaches are converted, so one call costs the bytes it consumes
 * plus the entries it changes, never the depth of the whole stack.
 *
 * ``buf`` may be any buffer, also one another process rewrites: each token's head, argument and
 * text are read once, and every position is checked against ``end`` (at most the buffer's length)
 * on those reads, so changed bytes change where the walk stops, never what it reads.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef __int128 count_t;

#define IND_KEY (-2)
#define IND_VALUE (-3)

static int to_count(PyObject *item, count_t *out) {
    if (!PyLong_CheckExact(item)) { /* no __index__: no Python code may run (and change the list) mid-walk */
        PyErr_SetString(PyExc_TypeError, "skip_plain: stack entries must be ints");
        return -1;
    }
    int overflow = 0;
    long long small = PyLong_AsLongLongAndOverflow(item, &overflow);
    if (small == -1 && PyErr_Occurred()) return -1;
    if (!overflow) {
        *out = small;
        return 0;
    }
    unsigned char bytes[16];
#if PY_VERSION_HEX >= 0x030D0000
    Py_ssize_t need = PyLong_AsNativeBytes(item, bytes, 16, Py_ASNATIVEBYTES_LITTLE_ENDIAN);
    if (need < 0) return -1;
    if (need > 16) {
        PyErr_SetString(PyExc_OverflowError, "stack entry out of range");
        return -1;
    }
#else
    if (_PyLong_AsByteArray((PyLongObject *)item, bytes, 16, 1, 1) < 0) return -1;
#endif
    unsigned __int128 value = 0; /* two's complement bits, shifted unsigned */
    for (int i = 15; i >= 0; i--) value = (value << 8) | bytes[i];
    *out = (count_t)value;
    return 0;
}

static PyObject *from_count(count_t value) {
    if (value >= INT64_MIN && value <= INT64_MAX) return PyLong_FromLongLong((long long)value);
    unsigned char bytes[16];
    for (int i = 0; i < 16; i++) bytes[i] = (unsigned char)((unsigned __int128)value >> (8 * i));
#if PY_VERSION_HEX >= 0x030D0000
    return PyLong_FromNativeBytes(bytes, 16, Py_ASNATIVEBYTES_LITTLE_ENDIAN);
#else
    return _PyLong_FromByteArray(bytes, 16, 1, 1);
#endif
}

/* Well-formed UTF-8 (Unicode table 3-7: no overlongs, surrogates or code points past U+10FFFF). */
static int valid_utf8(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        while (i + 8 <= n) {
            uint64_t word;
            memcpy(&word, s + i, 8);
            if (word & 0x8080808080808080ULL) break;
            i += 8;
        }
        if (i >= n) break;
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80) return 0;
            i += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (i + 2 >= n) return 0;
            unsigned char c1 = s[i + 1];
            unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
            if (c1 < lo || c1 > hi || (s[i + 2] & 0xC0) != 0x80) return 0;
            i += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (i + 3 >= n) return 0;
            unsigned char c1 = s[i + 1];
            unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
            if (c1 < lo || c1 > hi || (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80) return 0;
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

static PyObject *skip_plain(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t pos, end, scratch;
    long long depth;
    PyObject *stack;
    if (!PyArg_ParseTuple(args, "y*nnLnO!", &view, &pos, &end, &depth, &scratch, &PyList_Type, &stack)) return NULL;
    PyObject *result = NULL;
    count_t *st = NULL;
    if (pos < 0 || end < pos || end > view.len || depth < 0 || depth > (1 << 20) || scratch < 0) {
        PyErr_SetString(PyExc_ValueError, "skip_plain: position, end, depth or scratch out of range");
        goto out;
    }
    const unsigned char *buf = (const unsigned char *)view.buf;
    Py_ssize_t listed = PyList_GET_SIZE(stack); /* stack[:listed] is untouched; st[:top] follows it */
    Py_ssize_t top = 0;
    /* Entries pushed take a level of depth each; entries popped off the list give one back. */
    st = PyMem_Malloc(sizeof(count_t) * (size_t)(depth + listed + 2));
    if (st == NULL) {
        PyErr_NoMemory();
        goto out;
    }
    if (listed) {
        if (to_count(PyList_GET_ITEM(stack, listed - 1), &st[0]) < 0) goto out;
        listed--;
        top = 1;
    }
    int done = 0;
    while (top && st[top - 1] > 0 && pos < end) {
        unsigned int initial = buf[pos];
        unsigned int major = initial >> 5, info = initial & 0x1F;
        uint64_t arg;
        Py_ssize_t head;
        if (info < 24) {
            arg = info;
            head = 1;
        } else if (info < 28) {
            head = 1 + ((Py_ssize_t)1 << (info - 24));
            if (head > end - pos) break;
            arg = 0;
            for (Py_ssize_t i = 1; i < head; i++) arg = (arg << 8) | buf[pos + i];
        } else {
            break;
        }
        if (major <= 1) {
            pos += head;
        } else if (major == 7) {
            if (!((info >= 20 && info <= 23) || (info >= 25 && info <= 27))) break;
            pos += head;
        } else if (major <= 3) {
            if (arg > (uint64_t)scratch || arg > (uint64_t)(end - pos - head)) break;
            if (major == 3 && !valid_utf8(buf + pos + head, (Py_ssize_t)arg)) break;
            pos += head + (Py_ssize_t)arg;
        } else if (major <= 5) {
            if (depth == 0) break;
            pos += head;
            count_t items = major == 4 ? (count_t)arg : 2 * (count_t)arg;
            if (items) {
                depth--;
                st[top++] = items;
                continue;
            }
        } else { /* a tag: ignored, its item read next (bignums need the careful path) */
            if (arg == 2 || arg == 3 || depth == 0) break;
            pos += head;
            depth--;
            st[top++] = 1;
            continue;
        }
        for (;;) { /* the item is complete: count it off, closing the containers it fills */
            if (!top) {
                if (!listed) {
                    done = 1;
                    break;
                }
                if (to_count(PyList_GET_ITEM(stack, listed - 1), &st[0]) < 0) goto out;
                listed--;
                top = 1;
            }
            count_t t = st[top - 1];
            if (t > 1) {
                st[top - 1] = t - 1;
                break;
            }
            if (t == 1) {
                top--;
                depth++;
                continue;
            }
            st[top - 1] = t == IND_KEY ? IND_VALUE : t == IND_VALUE ? IND_KEY : t;
            break;
        }
        if (done) break;
    }
    PyObject *tail = PyList_New(top);
    if (tail == NULL) goto out;
    for (Py_ssize_t i = 0; i < top; i++) {
        PyObject *entry = from_count(st[i]);
        if (entry == NULL) {
            Py_DECREF(tail);
            goto out;
        }
        PyList_SET_ITEM(tail, i, entry);
    }
    int failed = PyList_SetSlice(stack, listed, PyList_GET_SIZE(stack), tail);
    Py_DECREF(tail);
    if (failed) goto out;
    result = Py_BuildValue("nLO", pos, depth, done ? Py_True : Py_False);
out:
    PyMem_Free(st);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"skip_plain", skip_plain, METH_VARARGS,
     "skip_plain(buf, pos, end, depth, scratch, stack) -> (pos, depth, done): burnpack.codec._cbor.skip_plain, compiled."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "burnpack.codec._cskip",
                                    "The compiled kernel of burnpack.codec._cbor.skip_plain.", -1, methods};

PyMODINIT_FUNC PyInit__cskip(void) {
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "INTERFACE", 2) < 0) Py_CLEAR(m); /* _kernels.KERNELS */
    return m;
}
