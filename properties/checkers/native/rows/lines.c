/*
 * lines.c: a JSON Lines file's valid events read in C straight from its bytes -- the C twin
 * of traces/reader.py iter_lines and traces/schema.py loads for the lines it reads as they
 * do, each one recognised by rows.c (epochal_event_recognised: the schema's generated check,
 * then normalize) and tagged with its file and line as the job's reader tags it.
 *
 * Why: decoding each line into Python objects through msgspec, one call and one generator
 * step per line, then recognising the valid events in another pass, was the largest share
 * of the job's reading; here one call reads a whole file.
 *
 * It only ever says "a valid event, this dict": a line it does not read exactly as
 * json.loads does -- a number, literal or escape it does not take (NaN, a lone surrogate),
 * bad UTF-8, a syntax error, nesting past MAXDEPTH, a memory error -- and a line it reads
 * that is not a valid event, are handed back as their bytes, for the Python side to
 * decode, validate and word the reason of, as before.  So the valid events, the
 * quarantined lines and their reasons are the Python reader's
 * (tests/conformance/test_compiled_rows.py holds them together).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "rows.h"

enum { MAXDEPTH = 32, CACHE = 2048, CACHED_LEN = 40, SMALL = 256 };

typedef struct { const unsigned char *p, *end; } Text;

/* Short ASCII strings met before (keys, kinds, run ids), shared: each is built and hashed once */
static PyObject *cache[CACHE];

static PyObject *s_file, *s_line, *s_run;

/* s[0:n], ASCII without escapes, as a str; h: its slot's hash so far (FNV-1a) */
static PyObject *ascii(const unsigned char *s, Py_ssize_t n, uint32_t h) {
    PyObject **at = NULL;
    if (n <= CACHED_LEN) {
        at = &cache[h & (CACHE - 1)];
        PyObject *known = *at;
        if (known != NULL && PyUnicode_GET_LENGTH(known) == n && memcmp(PyUnicode_1BYTE_DATA(known), s, (size_t)n) == 0) {
            Py_INCREF(known);
            return known;
        }
    }
    PyObject *u = PyUnicode_New(n, 127);
    if (u == NULL) return NULL;
    memcpy(PyUnicode_1BYTE_DATA(u), s, (size_t)n);
    if (at != NULL) {
        Py_XDECREF(*at);
        Py_INCREF(u);
        *at = u;
    }
    return u;
}

static int hex4(const unsigned char *p, const unsigned char *end, unsigned *out) {
    unsigned v = 0;
    if (end - p < 4) return 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = p[i], d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return 0;
        v = v * 16 + d;
    }
    *out = v;
    return 1;
}

static unsigned char *utf8(unsigned char *o, unsigned c) {
    if (c < 0x80) *o++ = (unsigned char)c;
    else if (c < 0x800) { *o++ = (unsigned char)(0xC0 | c >> 6); *o++ = (unsigned char)(0x80 | (c & 0x3F)); }
    else if (c < 0x10000) {
        *o++ = (unsigned char)(0xE0 | c >> 12);
        *o++ = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        *o++ = (unsigned char)(0x80 | (c & 0x3F));
    } else {
        *o++ = (unsigned char)(0xF0 | c >> 18);
        *o++ = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
        *o++ = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        *o++ = (unsigned char)(0x80 | (c & 0x3F));
    }
    return o;
}

/* The escapes of s[0:n] decoded into out (never longer than s): its length, or -1 where
 * json.loads would not read them so (a bad escape; a lone surrogate, which it keeps) */
static Py_ssize_t unescaped(const unsigned char *s, Py_ssize_t n, unsigned char *out) {
    const unsigned char *end = s + n;
    unsigned char *o = out;
    while (s < end) {
        if (*s != '\\') { *o++ = *s++; continue; }
        if (end - s < 2) return -1;
        unsigned char e = s[1];
        s += 2;
        switch (e) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned c, low;
            if (!hex4(s, end, &c)) return -1;
            s += 4;
            if (c >= 0xDC00 && c <= 0xDFFF) return -1;
            if (c >= 0xD800 && c <= 0xDBFF) { /* only a pair: json.loads joins it */
                if (end - s < 6 || s[0] != '\\' || s[1] != 'u' || !hex4(s + 2, end, &low) || low < 0xDC00 || low > 0xDFFF)
                    return -1;
                s += 6;
                c = 0x10000 + ((c - 0xD800) << 10) + (low - 0xDC00);
            }
            o = utf8(o, c);
            break;
        }
        default: return -1;
        }
    }
    return o - out;
}

/* A string at t->p (its opening quote) */
static PyObject *string(Text *t) {
    const unsigned char *s = ++t->p, *q = s;
    uint32_t h = 2166136261u; /* FNV-1a, for the cache */
    while (q < t->end && *q != '"' && *q != '\\' && *q >= 0x20 && *q < 0x80) h = (h ^ *q++) * 16777619u;
    if (q < t->end && *q == '"') { /* plain ASCII: the usual string */
        t->p = q + 1;
        return ascii(s, q - s, h);
    }
    while (q < t->end && *q != '"') {
        if (*q == '\\') {
            q += 2;
            continue;
        }
        if (*q < 0x20) return NULL; /* json.loads's strict strings */
        q++;
    }
    if (q >= t->end) return NULL;
    t->p = q + 1;
    Py_ssize_t n = q - s;
    unsigned char small[SMALL], *buf = n <= SMALL ? small : PyMem_Malloc((size_t)n);
    if (buf == NULL) return NULL;
    Py_ssize_t m = unescaped(s, n, buf);
    PyObject *u = m < 0 ? NULL : PyUnicode_DecodeUTF8((const char *)buf, m, NULL); /* strict: bad UTF-8 refused */
    if (buf != small) PyMem_Free(buf);
    return u;
}

static int at_digit(const Text *t, const unsigned char *q) { return q < t->end && *q >= '0' && *q <= '9'; }

/* A number as json.loads reads it: an int, or float() of the text with a fraction or exponent */
static PyObject *number(Text *t) {
    const unsigned char *s = t->p, *q = s;
    int is_float = 0;
    if (q < t->end && *q == '-') q++;
    if (!at_digit(t, q)) return NULL; /* (-Infinity: the Python side's) */
    if (*q == '0') q++;
    else while (at_digit(t, q)) q++;
    if (q < t->end && *q == '.') {
        if (!at_digit(t, q + 1)) return NULL;
        q++;
        while (at_digit(t, q)) q++;
        is_float = 1;
    }
    if (q < t->end && (*q == 'e' || *q == 'E')) {
        const unsigned char *e = q + 1;
        if (e < t->end && (*e == '+' || *e == '-')) e++;
        if (!at_digit(t, e)) return NULL;
        q = e;
        while (at_digit(t, q)) q++;
        is_float = 1;
    }
    t->p = q;
    Py_ssize_t n = q - s;
    if (!is_float && n <= 18) {
        long long v = 0;
        for (const unsigned char *d = *s == '-' ? s + 1 : s; d < q; d++) v = v * 10 + (*d - '0');
        return PyLong_FromLongLong(*s == '-' ? -v : v);
    }
    char small[SMALL], *buf = n < SMALL ? small : PyMem_Malloc((size_t)n + 1);
    if (buf == NULL) return NULL;
    memcpy(buf, s, (size_t)n);
    buf[n] = 0;
    PyObject *v = NULL;
    if (is_float) {
        char *end;
        double d = PyOS_string_to_double(buf, &end, NULL); /* float(): past the range, inf */
        if (!(d == -1.0 && PyErr_Occurred()) && end == buf + n) v = PyFloat_FromDouble(d);
    } else {
        v = PyLong_FromString(buf, NULL, 10); /* (past int's digit limit: refused, as json.loads does) */
    }
    if (buf != small) PyMem_Free(buf);
    return v;
}

static void blank(Text *t) { /* JSON's whitespace */
    while (t->p < t->end && (*t->p == ' ' || *t->p == '\t' || *t->p == '\r' || *t->p == '\n')) t->p++;
}

static int is(Text *t, char c) {
    if (t->p < t->end && *t->p == (unsigned char)c) {
        t->p++;
        return 1;
    }
    return 0;
}

static PyObject *value(Text *t, int depth);

static PyObject *object(Text *t, int depth) {
    t->p++;
    PyObject *d = PyDict_New();
    if (d == NULL) return NULL;
    blank(t);
    if (is(t, '}')) return d;
    for (;;) {
        if (t->p >= t->end || *t->p != '"') break;
        PyObject *k = string(t);
        if (k == NULL) break;
        blank(t);
        if (!is(t, ':')) {
            Py_DECREF(k);
            break;
        }
        blank(t);
        PyObject *v = value(t, depth + 1);
        int set = v != NULL && PyDict_SetItem(d, k, v) == 0; /* a key given twice: the last value, as json.loads */
        Py_DECREF(k);
        Py_XDECREF(v);
        if (!set) break;
        blank(t);
        if (is(t, ',')) {
            blank(t);
            continue;
        }
        if (is(t, '}')) return d;
        break;
    }
    Py_DECREF(d);
    return NULL;
}

static PyObject *array(Text *t, int depth) {
    t->p++;
    PyObject *a = PyList_New(0);
    if (a == NULL) return NULL;
    blank(t);
    if (is(t, ']')) return a;
    for (;;) {
        PyObject *v = value(t, depth + 1);
        int added = v != NULL && PyList_Append(a, v) == 0;
        Py_XDECREF(v);
        if (!added) break;
        blank(t);
        if (is(t, ',')) {
            blank(t);
            continue;
        }
        if (is(t, ']')) return a;
        break;
    }
    Py_DECREF(a);
    return NULL;
}

static int word(Text *t, const char *w, size_t n) {
    if ((size_t)(t->end - t->p) < n || memcmp(t->p, w, n) != 0) return 0;
    t->p += n;
    return 1;
}

/* The value at t->p (no whitespace before it), or NULL: not read here */
static PyObject *value(Text *t, int depth) {
    if (t->p >= t->end || depth > MAXDEPTH) return NULL;
    switch (*t->p) {
    case '{': return object(t, depth);
    case '[': return array(t, depth);
    case '"': return string(t);
    case 't': return word(t, "true", 4) ? (Py_INCREF(Py_True), Py_True) : NULL;
    case 'f': return word(t, "false", 5) ? (Py_INCREF(Py_False), Py_False) : NULL;
    case 'n': return word(t, "null", 4) ? (Py_INCREF(Py_None), Py_None) : NULL;
    default: return number(t);
    }
}

/* json.loads(line), or NULL (no exception set): the Python side's to decode */
static PyObject *decoded(const unsigned char *s, const unsigned char *end) {
    Text t = {s, end};
    blank(&t);
    PyObject *v = value(&t, 0);
    if (v != NULL) {
        blank(&t);
        if (t.p != t.end) Py_CLEAR(v); /* extra data */
    }
    if (v == NULL) PyErr_Clear();
    return v;
}

static int space(unsigned char c) { /* bytes.strip()'s */
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\x0b' || c == '\x0c';
}

/* A valid event of line number n, tagged; 0 the Python side's; -1 with an exception set */
static int event(const unsigned char *s, const unsigned char *end, Py_ssize_t n, PyObject *tables, PyObject *file,
                 PyObject *events) {
    PyObject *obj = decoded(s, end);
    if (obj == NULL) return 0;
    int ok = epochal_event_recognised(obj, tables);
    if (ok == 1) {
        PyObject *line = PyLong_FromSsize_t(n);
        ok = line != NULL && PyDict_SetItem(obj, s_file, file) == 0 && PyDict_SetItem(obj, s_line, line) == 0 &&
                     PyList_Append(events, obj) == 0
                 ? 1
                 : -1;
        Py_XDECREF(line);
    }
    Py_DECREF(obj);
    return ok;
}

/* A plain JSON Lines file's bytes read: (events, others, run).  events: its valid events in
 * line order, each normalized and tagged with "_file" (file) and "_line" (its 1-based line
 * number) as the job's reader tags them; others: (how many events precede it, line number,
 * bytes) of every other line that is not blank (its trailing carriage returns cut, as
 * iter_lines cuts them) -- the Python side's; run: the run of every event where they all
 * have one (None otherwise).  tables: compiled_batch's event tables.  None where the
 * arguments are not what the reader hands over; NULL with an exception set (memory). */
PyObject *epochal_read_lines(PyObject *data, PyObject *tables, PyObject *file) {
    if (!PyBytes_CheckExact(data) || !epochal_event_tables(tables) || !PyUnicode_CheckExact(file)) Py_RETURN_NONE;
    if (s_file == NULL) {
        s_file = PyUnicode_InternFromString("_file");
        s_line = PyUnicode_InternFromString("_line");
        s_run = PyUnicode_InternFromString("run");
        if (s_file == NULL || s_line == NULL || s_run == NULL) return NULL;
    }
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(data), *end = p + PyBytes_GET_SIZE(data);
    PyObject *events = PyList_New(0), *others = PyList_New(0), *run = NULL;
    int one_run = 1;
    if (events == NULL || others == NULL) goto failed;
    for (Py_ssize_t n = 1; p <= end; n++) {
        const unsigned char *nl = memchr(p, '\n', (size_t)(end - p)), *stop = nl == NULL ? end : nl, *next = stop + 1;
        while (stop > p && stop[-1] == '\r') stop--;
        const unsigned char *c = p;
        while (c < stop && space(*c)) c++;
        if (c < stop) {
            int read = event(p, stop, n, tables, file, events);
            if (read < 0) goto failed;
            if (read == 0) {
                PyObject *other = Py_BuildValue("(nny#)", PyList_GET_SIZE(events), n, (const char *)p, (Py_ssize_t)(stop - p));
                int added = other != NULL && PyList_Append(others, other) == 0;
                Py_XDECREF(other);
                if (!added) goto failed;
            } else if (one_run) {
                PyObject *last = PyList_GET_ITEM(events, PyList_GET_SIZE(events) - 1);
                PyObject *its = PyDict_GetItemWithError(last, s_run); /* (a valid event's run is a str) */
                if (its == NULL && PyErr_Occurred()) goto failed;
                if (its == NULL || !PyUnicode_CheckExact(its)) one_run = 0;
                else if (run == NULL) run = its;
                else if (its != run) one_run = PyUnicode_Compare(its, run) == 0; /* (two str: no error) */
            }
        }
        if (nl == NULL) break;
        p = next;
    }
    PyObject *answer = Py_BuildValue("(NNO)", events, others, one_run && run != NULL ? run : Py_None);
    return answer;
failed:
    Py_XDECREF(events);
    Py_XDECREF(others);
    return NULL;
}
