/* The compiled kernel of the writer's metadata encoding (burnpack/core/metadata.py): ``encode_entries``
 * gives exactly the bytes ``metadata.python_encode_entries`` gives, the 'tensors' map's entries
 * one after another, at the speed of copying them.
 *
 *     encode_entries(names, layouts, starts, ends, param_ids) -> bytes
 *
 * Entry i is the CBOR text ``names[i]``, the bytes ``layouts[i]`` (a ``TensorDescriptor_layout``:
 * the struct head up to the key of data_offsets), the array ``[starts[i], ends[i]]`` and, when
 * ``param_ids[i]`` is not None, the key ``param_id`` and its value. ``names`` is a list of str,
 * ``layouts`` a list of bytes, ``starts`` and ``ends`` buffers of native uint64 (one per entry),
 * ``param_ids`` None (no entry has one) or a list of None or ints below 2^64. Integers take
 * CBOR's shortest form, as ciborium writes them. Two passes: the size, then the bytes. The first
 * copies every offset (read with memcpy: the buffers may sit at any alignment) and the second
 * writes those copies, so the bytes written are the bytes sized even if the buffers change
 * meanwhile (shared memory another process writes).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static const char PARAM_ID_KEY[] = "\x68param_id";
#define PARAM_ID_KEY_LEN 9

static Py_ssize_t head_size(uint64_t n) {
    return n < 24 ? 1 : n < 0x100 ? 2 : n < 0x10000 ? 3 : n < 0x100000000ULL ? 5 : 9;
}

static char *put_head(char *out, unsigned major, uint64_t n) {
    int width = n < 24 ? 0 : n < 0x100 ? 1 : n < 0x10000 ? 2 : n < 0x100000000ULL ? 4 : 8;
    if (width == 0) {
        *out++ = (char)(major | (unsigned)n);
        return out;
    }
    *out++ = (char)(major | (width == 1 ? 0x18u : width == 2 ? 0x19u : width == 4 ? 0x1Au : 0x1Bu));
    for (int i = width - 1; i >= 0; i--) *out++ = (char)(n >> (8 * i));
    return out;
}

static int param_value(PyObject *item, uint64_t *out) {
    if (!PyLong_CheckExact(item)) {
        PyErr_SetString(PyExc_TypeError, "encode_entries: param ids must be None or ints");
        return -1;
    }
    unsigned long long value = PyLong_AsUnsignedLongLong(item);
    if (value == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    *out = value;
    return 0;
}

static PyObject *encode_entries(PyObject *self, PyObject *args) {
    PyObject *names, *layouts, *param_ids;
    Py_buffer starts, ends;
    if (!PyArg_ParseTuple(args, "O!O!y*y*O", &PyList_Type, &names, &PyList_Type, &layouts, &starts, &ends, &param_ids)) return NULL;
    PyObject *result = NULL;
    uint64_t *start = NULL, *end = NULL;
    Py_ssize_t n = PyList_GET_SIZE(names);
    if (PyList_GET_SIZE(layouts) != n || starts.len != n * 8 || ends.len != n * 8 ||
        (param_ids != Py_None && (!PyList_CheckExact(param_ids) || PyList_GET_SIZE(param_ids) != n))) {
        PyErr_SetString(PyExc_ValueError, "encode_entries: every column needs one item per entry");
        goto done;
    }
    /* No Python code runs below (exact types only, no __index__), so the lists cannot change. */
    start = PyMem_Malloc(2 * (size_t)(n ? n : 1) * sizeof(uint64_t)); /* n * 8 bytes exist already: no overflow */
    if (start == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    end = start + n;
    Py_ssize_t size = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        memcpy(&start[i], (const char *)starts.buf + 8 * i, 8);
        memcpy(&end[i], (const char *)ends.buf + 8 * i, 8);
        PyObject *name = PyList_GET_ITEM(names, i), *layout = PyList_GET_ITEM(layouts, i);
        if (!PyUnicode_CheckExact(name) || !PyBytes_CheckExact(layout)) {
            PyErr_SetString(PyExc_TypeError, "encode_entries: names must be str and layouts bytes");
            goto done;
        }
        Py_ssize_t name_len;
        if (PyUnicode_AsUTF8AndSize(name, &name_len) == NULL) goto done; /* a lone surrogate: UnicodeEncodeError */
        /* each term is at most the size of an object in memory: the sum overflows only past
         * PY_SSIZE_T_MAX / 4 (one layout shared by very many entries) */
        Py_ssize_t entry = head_size((uint64_t)name_len) + name_len + PyBytes_GET_SIZE(layout) + 1 + head_size(start[i]) + head_size(end[i]);
        if (param_ids != Py_None) {
            PyObject *item = PyList_GET_ITEM(param_ids, i);
            uint64_t value;
            if (item != Py_None) {
                if (param_value(item, &value) < 0) goto done;
                entry += PARAM_ID_KEY_LEN + head_size(value);
            }
        }
        if (size > PY_SSIZE_T_MAX / 4) {
            PyErr_NoMemory();
            goto done;
        }
        size += entry;
    }
    result = PyBytes_FromStringAndSize(NULL, size);
    if (result == NULL) goto done;
    char *out = PyBytes_AS_STRING(result);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t name_len;
        const char *utf8 = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(names, i), &name_len);
        out = put_head(out, 0x60, (uint64_t)name_len);
        memcpy(out, utf8, (size_t)name_len);
        out += name_len;
        PyObject *layout = PyList_GET_ITEM(layouts, i);
        memcpy(out, PyBytes_AS_STRING(layout), (size_t)PyBytes_GET_SIZE(layout));
        out += PyBytes_GET_SIZE(layout);
        *out++ = (char)0x82;
        out = put_head(out, 0, start[i]);
        out = put_head(out, 0, end[i]);
        if (param_ids != Py_None) {
            PyObject *item = PyList_GET_ITEM(param_ids, i);
            if (item != Py_None) {
                uint64_t value = 0;
                param_value(item, &value); /* an exact int below 2**64: checked in the first pass */
                memcpy(out, PARAM_ID_KEY, PARAM_ID_KEY_LEN);
                out = put_head(out + PARAM_ID_KEY_LEN, 0, value);
            }
        }
    }
done:
    PyMem_Free(start);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&ends);
    return result;
}

static PyMethodDef methods[] = {
    {"encode_entries", encode_entries, METH_VARARGS, "The 'tensors' map's entries from columns (see metadata.python_encode_entries)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cencode", "The compiled metadata encoder (optional).", -1, methods};

PyMODINIT_FUNC PyInit__cencode(void) {
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "INTERFACE", 2) < 0) Py_CLEAR(m); /* _kernels.KERNELS */
    return m;
}
