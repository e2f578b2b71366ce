/* The compiled kernel of the table tier (burnpack/core/table.py): ``scan_entries`` splits a
 * ``tensors`` map written exactly as Burn writes it into the columns ``table.python_columns``
 * produces, in one pass over the bytes.
 *
 *     scan_entries(buf, pos, count, spec) -> (end, names, dtype_keys, rank_head, shape_keys,
 *                                               starts, ends, param_ids, max_end) | None
 *
 * ``spec`` is ``table._KERNEL_SPEC``: (struct head, dtype key, dtype values, shape key,
 * data_offsets key with its tuple head, param_id key), every literal taken from the generated
 * codec, none written here. ``starts``/``ends`` are native uint64 values in bytes (read-only:
 * the arrays made over them cannot be made writable);
 * ``max_end`` is the largest end (an open checks it against the file's size, and needs no
 * column for that).
 *
 * None means "not proven": the Python scan then decides, exactly as without the kernel. So the
 * kernel may decline anything, but accepts only entries the Python scan accepts with the same
 * columns: a name of at most 255 bytes (head 0x60-0x78) holding no struct-head byte, valid UTF-8
 * without NUL, names strictly increasing; the struct head followed by the descriptor, each integer
 * a definite unsigned integer, the shape's rank its integer count, param_id present exactly when
 * the struct head counts it. Work and memory grow with the bytes present: ``count`` is believed
 * only as far as the bytes could hold that many entries.
 *
 * ``buf`` is a ``bytes`` object: the second pass copies names and keys at the places the first
 * pass proved, so the bytes must be the ones the first pass read (a buffer another process could
 * rewrite, such as a mapped file, is refused; table.py copies the metadata into bytes anyway).
 * Every offset the second pass uses lies inside ``buf``; ``starts`` and ``ends`` are written
 * with memcpy (no cast of a buffer to uint64_t).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MIN_ENTRY 34 /* name head, struct head, "dtype" and "bI8", "shape" and a rank-0 head, "data_offsets", tuple head, two integers */
#define MAX_DTYPES 32

typedef struct {
    Py_ssize_t name, name_len;
    Py_ssize_t shape, shape_head, shape_body;
    Py_ssize_t param, param_len;
    uint64_t start, end;
    int dtype;
} entry_t;

typedef struct {
    int head;
    const char *dtype_key, *shape_key, *offsets_key, *param_key;
    Py_ssize_t dtype_key_len, shape_key_len, offsets_key_len, param_key_len;
    int n_dtypes;
    const char *dtypes[MAX_DTYPES];
    Py_ssize_t dtype_lens[MAX_DTYPES];
    PyObject *dtype_objs[MAX_DTYPES];
} spec_t;

/* A definite unsigned integer at p: its width (head and argument), 0 if none fits before end. */
static Py_ssize_t uint_at(const unsigned char *b, Py_ssize_t p, Py_ssize_t end, uint64_t *value) {
    if (p >= end) return 0;
    unsigned head = b[p];
    if (head < 0x18) {
        *value = head;
        return 1;
    }
    if (head > 0x1b) return 0;
    Py_ssize_t width = (Py_ssize_t)1 << (head - 0x18);
    if (end - p - 1 < width) return 0;
    uint64_t v = 0;
    for (Py_ssize_t k = 1; k <= width; k++) v = (v << 8) | b[p + k];
    *value = v;
    return 1 + width;
}

static int literal_at(const unsigned char *b, Py_ssize_t p, Py_ssize_t end, const char *lit, Py_ssize_t len) {
    return end - p >= len && memcmp(b + p, lit, (size_t)len) == 0;
}

static int bytes_field(PyObject *spec, Py_ssize_t i, const char **out, Py_ssize_t *len) {
    PyObject *item = PyTuple_GET_ITEM(spec, i);
    if (!PyBytes_Check(item)) {
        PyErr_SetString(PyExc_TypeError, "scan_entries: spec keys must be bytes");
        return -1;
    }
    *out = PyBytes_AS_STRING(item);
    *len = PyBytes_GET_SIZE(item);
    return 0;
}

static int read_spec(PyObject *spec, spec_t *s) {
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 6) {
        PyErr_SetString(PyExc_TypeError, "scan_entries: spec must be a 6-tuple");
        return -1;
    }
    s->head = (int)PyLong_AsLong(PyTuple_GET_ITEM(spec, 0));
    if (s->head == -1 && PyErr_Occurred()) return -1;
    if (bytes_field(spec, 1, &s->dtype_key, &s->dtype_key_len) < 0 || bytes_field(spec, 3, &s->shape_key, &s->shape_key_len) < 0
        || bytes_field(spec, 4, &s->offsets_key, &s->offsets_key_len) < 0 || bytes_field(spec, 5, &s->param_key, &s->param_key_len) < 0)
        return -1;
    PyObject *dtypes = PyTuple_GET_ITEM(spec, 2);
    if (!PyTuple_Check(dtypes) || PyTuple_GET_SIZE(dtypes) > MAX_DTYPES) {
        PyErr_SetString(PyExc_TypeError, "scan_entries: spec dtypes must be a tuple of at most 32 bytes");
        return -1;
    }
    s->n_dtypes = (int)PyTuple_GET_SIZE(dtypes);
    for (int i = 0; i < s->n_dtypes; i++)
        if (bytes_field(dtypes, i, &s->dtypes[i], &s->dtype_lens[i]) < 0) return -1;
        else s->dtype_objs[i] = PyTuple_GET_ITEM(dtypes, i);
    return 0;
}

/* One entry at p: its end, or 0 when it is not proven as the Python scan would read it. */
static Py_ssize_t entry_at(const unsigned char *b, Py_ssize_t p, Py_ssize_t end, const spec_t *s, entry_t *e) {
    if (p >= end) return 0;
    unsigned head = b[p];
    Py_ssize_t len;
    if (head >= 0x60 && head <= 0x77) {
        len = head - 0x60;
        p += 1;
    } else if (head == 0x78 && end - p >= 2) {
        len = b[p + 1];
        p += 2;
    } else {
        return 0;
    }
    if (end - p <= len) return 0;
    for (Py_ssize_t k = 0; k < len; k++) /* a struct-head byte in a name: the Python scan's lazy pattern decides */
        if (b[p + k] == s->head || b[p + k] == s->head + 1 || b[p + k] == 0) return 0;
    e->name = p;
    e->name_len = len;
    p += len;
    unsigned struct_head = b[p++];
    if (struct_head != (unsigned)s->head && struct_head != (unsigned)s->head + 1) return 0;
    if (!literal_at(b, p, end, s->dtype_key, s->dtype_key_len)) return 0;
    p += s->dtype_key_len;
    e->dtype = -1;
    for (int i = 0; i < s->n_dtypes; i++)
        if (literal_at(b, p, end, s->dtypes[i], s->dtype_lens[i])) {
            e->dtype = i;
            p += s->dtype_lens[i];
            break;
        }
    if (e->dtype < 0 || !literal_at(b, p, end, s->shape_key, s->shape_key_len)) return 0;
    p += s->shape_key_len;
    if (p >= end) return 0;
    unsigned shape_head = b[p];
    uint64_t rank;
    Py_ssize_t shape_head_len;
    if (shape_head >= 0x80 && shape_head <= 0x97) {
        rank = shape_head - 0x80;
        shape_head_len = 1;
    } else if (shape_head == 0x98 && end - p >= 2) {
        rank = b[p + 1];
        shape_head_len = 2;
    } else if (shape_head == 0x99 && end - p >= 3) {
        rank = ((uint64_t)b[p + 1] << 8) | b[p + 2];
        shape_head_len = 3;
    } else {
        return 0;
    }
    e->shape = p;
    e->shape_head = shape_head_len;
    p += shape_head_len;
    Py_ssize_t body = p;
    uint64_t dims = 0, value;
    while (p < end && b[p] < 0x1c) {
        Py_ssize_t w = uint_at(b, p, end, &value);
        if (!w) return 0;
        p += w;
        dims++;
    }
    if (dims != rank) return 0;
    e->shape_body = p - body;
    if (!literal_at(b, p, end, s->offsets_key, s->offsets_key_len)) return 0;
    p += s->offsets_key_len;
    Py_ssize_t w = uint_at(b, p, end, &e->start);
    if (!w) return 0;
    p += w;
    w = uint_at(b, p, end, &e->end);
    if (!w) return 0;
    p += w;
    e->param = p;
    e->param_len = 0;
    if (literal_at(b, p, end, s->param_key, s->param_key_len)) {
        if (struct_head == (unsigned)s->head) return 0; /* a field the struct head does not count */
        p += s->param_key_len;
        w = uint_at(b, p, end, &value);
        if (!w) return 0;
        e->param = p;
        e->param_len = w;
        p += w;
    } else if (struct_head != (unsigned)s->head) {
        return 0;
    }
    return p;
}

static int fill_list(PyObject *list, Py_ssize_t i, PyObject *item) {
    if (item == NULL) return -1;
    PyList_SET_ITEM(list, i, item);
    return 0;
}

static PyObject *scan_entries(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *data;
    Py_ssize_t pos, count;
    PyObject *spec_obj;
    spec_t spec;
    if (!PyArg_ParseTuple(args, "O!nnO", &PyBytes_Type, &data, &pos, &count, &spec_obj)) return NULL;
    PyObject *result = NULL, *names = NULL, *dtypes = NULL, *shape_keys = NULL, *param_ids = NULL;
    PyObject *starts = NULL, *ends = NULL, *rank_head = NULL, *empty = NULL;
    entry_t *entries = NULL;
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(data);
    Py_ssize_t end = PyBytes_GET_SIZE(data);
    if (read_spec(spec_obj, &spec) < 0) goto done;
    if (pos < 0 || pos > end || count <= 0 || count > (end - pos) / MIN_ENTRY) { /* more entries than the bytes could hold */
        result = Py_NewRef(Py_None);
        goto done;
    }
    entries = PyMem_Malloc((size_t)count * sizeof(entry_t));
    if (entries == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t p = pos;
    int uniform_rank = 1;
    for (Py_ssize_t i = 0; i < count; i++) {
        entry_t *e = &entries[i];
        p = entry_at(b, p, end, &spec, e);
        if (!p) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        if (i) {
            const entry_t *prev = &entries[i - 1];
            Py_ssize_t shorter = prev->name_len < e->name_len ? prev->name_len : e->name_len;
            int order = memcmp(b + prev->name, b + e->name, (size_t)shorter);
            if (order > 0 || (order == 0 && prev->name_len >= e->name_len)) { /* not sorted and distinct */
                result = Py_NewRef(Py_None);
                goto done;
            }
            if (e->shape_head != entries[0].shape_head || memcmp(b + e->shape, b + entries[0].shape, (size_t)e->shape_head) != 0)
                uniform_rank = 0;
        }
    }
    names = PyList_New(count);
    dtypes = PyList_New(count);
    shape_keys = PyList_New(count);
    param_ids = PyList_New(count);
    starts = PyBytes_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(uint64_t)); /* filled below, before anyone sees them */
    ends = PyBytes_FromStringAndSize(NULL, count * (Py_ssize_t)sizeof(uint64_t));
    empty = PyBytes_FromStringAndSize(NULL, 0);
    rank_head = uniform_rank ? PyBytes_FromStringAndSize((const char *)b + entries[0].shape, entries[0].shape_head)
                             : PyBytes_FromStringAndSize(NULL, 0);
    if (!names || !dtypes || !shape_keys || !param_ids || !starts || !ends || !empty || !rank_head) goto done;
    char *start_values = PyBytes_AS_STRING(starts), *end_values = PyBytes_AS_STRING(ends);
    PyObject *last_key = NULL;
    Py_ssize_t last_from = 0, last_len = -1;
    uint64_t max_end = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        const entry_t *e = &entries[i];
        PyObject *name = PyUnicode_DecodeUTF8((const char *)b + e->name, e->name_len, NULL);
        if (name == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) goto done;
            PyErr_Clear(); /* not UTF-8: the Python scan declines it too */
            Py_CLEAR(result);
            result = Py_NewRef(Py_None);
            goto done;
        }
        PyList_SET_ITEM(names, i, name);
        PyList_SET_ITEM(dtypes, i, Py_NewRef(spec.dtype_objs[e->dtype]));
        Py_ssize_t from = uniform_rank ? e->shape + e->shape_head : e->shape;
        Py_ssize_t len = uniform_rank ? e->shape_body : e->shape_head + e->shape_body;
        if (last_key == NULL || len != last_len || memcmp(b + from, b + last_from, (size_t)len) != 0) { /* equal keys share one object */
            last_key = PyBytes_FromStringAndSize((const char *)b + from, len);
            if (fill_list(shape_keys, i, last_key) < 0) goto done;
            last_from = from;
            last_len = len;
        } else {
            PyList_SET_ITEM(shape_keys, i, Py_NewRef(last_key));
        }
        if (fill_list(param_ids, i, e->param_len ? PyBytes_FromStringAndSize((const char *)b + e->param, e->param_len) : Py_NewRef(empty)) < 0)
            goto done;
        memcpy(start_values + i * (Py_ssize_t)sizeof(uint64_t), &e->start, sizeof(uint64_t));
        memcpy(end_values + i * (Py_ssize_t)sizeof(uint64_t), &e->end, sizeof(uint64_t));
        if (e->end > max_end) max_end = e->end;
    }
    result = Py_BuildValue("(nOOOOOOOK)", p, names, dtypes, rank_head, shape_keys, starts, ends, param_ids, (unsigned long long)max_end);
done:
    PyMem_Free(entries);
    Py_XDECREF(names);
    Py_XDECREF(dtypes);
    Py_XDECREF(shape_keys);
    Py_XDECREF(param_ids);
    Py_XDECREF(starts);
    Py_XDECREF(ends);
    Py_XDECREF(rank_head);
    Py_XDECREF(empty);
    return result;
}

static PyMethodDef methods[] = {
    {"scan_entries", scan_entries, METH_VARARGS, "The table tier's columns of a tensors map as Burn writes it, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_ctable", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__ctable(void) {
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "INTERFACE", 3) < 0) Py_CLEAR(m); /* _kernels.KERNELS */
    return m;
}
