/*
 * rows.c: each event's row for judge.c, written from the decoded event itself -- the C twin
 * of conformance/judge/compiled_batch.py's event_row and add (and of replay.py _row's
 * checks before them), for the events of a kind whose model action judge.c takes.
 *
 * Unlike the other units it reads Python objects (the event dicts, the judge's broker-id
 * map and value map), so it is built on its own, against the running interpreter's headers,
 * and called with the interpreter's lock held (ctypes.PyDLL).  It writes a stretch of
 * events' rows, one after the other, and stops at the first event it does not write
 * itself: an event of another kind, a field of a type or a number the row does not hold as
 * Python writes it.  Stopping is never an answer: the Python side writes that event's row
 * (or none) as before, and calls back for the next stretch.  So the rows are the Python
 * side's, int for int -- the value ids included, since a value is looked up and added in
 * the Python's own dict and list in the same order (tests/conformance/test_compiled_rows.py).
 *
 * It also reads a group's broker-id map and its registrations' broker epochs from the same
 * dicts in one pass (epochal_group_ids: observation.py broker_ids and registration_epochs),
 * and answers None -- the Python side's to read -- for any event it does not read as they do;
 * and, before that, recognises the valid events among a file's decoded objects
 * (epochal_valid_events: traces/schema.py validate's generated check, then normalize).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "rows.h"

/* compiled_batch.py V_* (judge.c's tags), the row's header and the fields' ways to be read */
enum { V_INT, V_NONE, V_STR, V_LIST, V_OTHER, V_RECORDS };
enum { HEADER = 5 };
enum { HOW_PLAIN, HOW_ID, HOW_ID_LIST, HOW_RECORDS, HOW_CUT };
enum { MAXROW = 4096 }; /* ints of one row written here (a longer one is the Python side's) */

/* What the Python side hands over once: the names, numbers and tables a row is read with */
typedef struct {
    PyObject *kinds;   /* kind -> None (no step) or (action, ((in_post, name, key, how), ...)) */
    PyObject *ids;     /* the trace's broker id -> the model's */
    PyObject *values;  /* value_key -> value id (CompiledSearch.ids) */
    PyObject *keys;    /* value id -> value_key (CompiledSearch.keys) */
    PyObject *strings; /* the strings a view holds -> their ids (compiled_batch.STRINGS) */
    long harness, unseen, handle_fetch, produce, no_step;
} Tables;

typedef struct { int n; int v[MAXROW]; } Row;

static PyObject *s_kind, *s_params, *s_post, *s_node, *s_broker, *s_records, *s_value, *s_retention, *s_str, *s_int,
    *s_elect, *s_reason, *s_preferred, *s_replicas, *s_broker_epoch, *s_schema, *s_seq, *s_clock, *s_zxid, *s_topic,
    *s_partition, *none;

static int interned(void) {
    if (none != NULL) return 1;
    s_kind = PyUnicode_InternFromString("kind");
    s_params = PyUnicode_InternFromString("params");
    s_post = PyUnicode_InternFromString("post");
    s_node = PyUnicode_InternFromString("node");
    s_broker = PyUnicode_InternFromString("broker");
    s_records = PyUnicode_InternFromString("records");
    s_value = PyUnicode_InternFromString("value");
    s_retention = PyUnicode_InternFromString("leader_log_start_offset"); /* traces.events RETENTION_MARK */
    s_str = PyUnicode_InternFromString("str");
    s_int = PyUnicode_InternFromString("int");
    s_elect = PyUnicode_InternFromString("elect_leader"); /* broker_ids: the preferred-replica election */
    s_reason = PyUnicode_InternFromString("reason");
    s_preferred = PyUnicode_InternFromString("preferred");
    s_replicas = PyUnicode_InternFromString("replicas");
    s_broker_epoch = PyUnicode_InternFromString("broker_epoch"); /* registration_epochs */
    s_schema = PyUnicode_InternFromString("schema"); /* traces/schema.py FIELDS: _event_check's, normalize's */
    s_seq = PyUnicode_InternFromString("seq");
    s_clock = PyUnicode_InternFromString("clock");
    s_zxid = PyUnicode_InternFromString("zxid");
    s_topic = PyUnicode_InternFromString("topic");
    s_partition = PyUnicode_InternFromString("partition");
    if (!(s_kind && s_params && s_post && s_node && s_broker && s_records && s_value && s_retention && s_str && s_int &&
          s_elect && s_reason && s_preferred && s_replicas && s_broker_epoch && s_schema && s_seq && s_clock && s_zxid &&
          s_topic && s_partition))
        return 0;
    none = PyDict_New(); /* an absent (or None) params or post: no field */
    return none != NULL;
}

static int put(Row *r, long v) {
    if (r->n >= MAXROW) return 0;
    r->v[r->n++] = (int)v;
    return 1;
}

/* x as a C int, as Python's -2**31 <= x < 2**31 on a plain int (not a bool) says */
static int c_int(PyObject *x, long *out) {
    if (x == NULL || !PyLong_CheckExact(x)) return 0;
    int overflow;
    long v = PyLong_AsLongAndOverflow(x, &overflow);
    if (overflow || v < INT32_MIN || v > INT32_MAX) return 0;
    *out = v;
    return 1;
}

/* d.get(key), NULL when absent; *failed when the lookup raised (an unhashable key: the
 * error is cleared, the Python side meets it again) */
static PyObject *lookup(PyObject *d, PyObject *key, int *failed) {
    PyObject *v = PyDict_GetItemWithError(d, key);
    *failed = v == NULL && PyErr_Occurred() != NULL;
    if (*failed) PyErr_Clear();
    return v;
}

static PyObject *get(PyObject *d, PyObject *key) {
    int failed;
    return lookup(d, key, &failed);
}

/* ids[x] (in the params: an unknown id makes the row the Python side's) or, in the post,
 * ids.get(x, UNSEEN) */
static int model_id(const Tables *t, PyObject *x, int in_post, long *out) {
    int failed;
    PyObject *b = lookup(t->ids, x, &failed);
    if (b == NULL) {
        if (!in_post || failed) return 0;
        *out = t->unseen;
        return 1;
    }
    return c_int(b, out);
}

/* A dict-valued field of the event (params, post): absent or None reads as {}; NULL for
 * anything else (the Python side's) */
static PyObject *as_dict(PyObject *v) {
    if (v == NULL || v == Py_None) return none;
    return PyDict_CheckExact(v) ? v : NULL;
}

/* CompiledSearch._value: the value's id, added to the value map if new; -1 on failure */
static long value_id(const Tables *t, PyObject *v) {
    PyObject *name = PyUnicode_CheckExact(v) ? (Py_INCREF(s_str), s_str)
                     : PyLong_CheckExact(v) ? (Py_INCREF(s_int), s_int)
                     : PyObject_GetAttrString((PyObject *)Py_TYPE(v), "__name__"); /* type(v).__name__ */
    if (name == NULL) { PyErr_Clear(); return -1; }
    PyObject *k = PyTuple_Pack(2, name, v);
    Py_DECREF(name);
    if (k == NULL) { PyErr_Clear(); return -1; }
    long id = -1;
    PyObject *known = PyDict_GetItemWithError(t->values, k);
    if (known != NULL) {
        if (!c_int(known, &id)) id = -1;
    } else if (!PyErr_Occurred()) {
        Py_ssize_t n = PyList_GET_SIZE(t->keys);
        PyObject *nid = PyLong_FromSsize_t(n);
        if (nid != NULL && n <= INT32_MAX && PyDict_SetItem(t->values, k, nid) == 0 && PyList_Append(t->keys, k) == 0)
            id = (long)n;
        Py_XDECREF(nid);
    }
    if (id < 0) PyErr_Clear(); /* unhashable: the Python side's to say */
    Py_DECREF(k);
    return id;
}

/* CompiledSearch._records of a list of plain records (offset, epoch, value) */
static int records(const Tables *t, PyObject *v, long key, Row *r) {
    if (!PyList_CheckExact(v)) return 0;
    Py_ssize_t n = PyList_GET_SIZE(v);
    if (!put(r, key) || !put(r, V_RECORDS) || n > MAXROW || !put(r, 3 * (long)n)) return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *rec = PyList_GET_ITEM(v, i);
        long offset, epoch, id;
        if (!PyList_CheckExact(rec) || PyList_GET_SIZE(rec) != 3) return 0;
        if (!c_int(PyList_GET_ITEM(rec, 0), &offset) || !c_int(PyList_GET_ITEM(rec, 1), &epoch)) return 0;
        if ((id = value_id(t, PyList_GET_ITEM(rec, 2))) < 0) return 0;
        if (!put(r, offset) || !put(r, epoch) || !put(r, id)) return 0;
    }
    return 1;
}

/* compiled_batch._plain of a value that is no plain int */
static int plain(const Tables *t, PyObject *v, long key, Row *r) {
    if (v == Py_None) return put(r, key) && put(r, V_NONE) && put(r, 0);
    if (PyUnicode_CheckExact(v)) {
        PyObject *sid = get(t->strings, v);
        long id;
        if (sid == NULL) return put(r, key) && put(r, V_OTHER) && put(r, 0);
        return c_int(sid, &id) && put(r, key) && put(r, V_STR) && put(r, 1) && put(r, id);
    }
    if (!PyList_CheckExact(v)) return 0;
    Py_ssize_t n = PyList_GET_SIZE(v);
    if (n > MAXROW || !put(r, key) || !put(r, V_LIST) || !put(r, (long)n)) return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        long x;
        if (!c_int(PyList_GET_ITEM(v, i), &x) || !put(r, x)) return 0;
    }
    return 1;
}

/* A list of broker ids as the model's, sorted */
static int id_list(const Tables *t, PyObject *v, int in_post, long key, Row *r) {
    Py_ssize_t n = PyList_GET_SIZE(v);
    if (n > MAXROW || !put(r, key) || !put(r, V_LIST) || !put(r, (long)n)) return 0;
    int *at = r->v + r->n;
    for (Py_ssize_t i = 0; i < n; i++) {
        long x;
        if (!model_id(t, PyList_GET_ITEM(v, i), in_post, &x) || !put(r, x)) return 0;
    }
    for (Py_ssize_t i = 1; i < n; i++) /* insertion sort: a handful of brokers */
        for (Py_ssize_t j = i; j > 0 && at[j - 1] > at[j]; j--) {
            int swap = at[j];
            at[j] = at[j - 1];
            at[j - 1] = swap;
        }
    return 1;
}

/* One field of the kind's plan (compiled_batch._filler's code for it): 1 written, 0 absent
 * (or a cut named as none), -1 the Python side's */
static int field(const Tables *t, PyObject *params, PyObject *post, PyObject *spec, Row *r) {
    int in_post = PyObject_IsTrue(PyTuple_GET_ITEM(spec, 0));
    long key = PyLong_AsLong(PyTuple_GET_ITEM(spec, 2)), how = PyLong_AsLong(PyTuple_GET_ITEM(spec, 3));
    int failed;
    PyObject *v = lookup(in_post ? post : params, PyTuple_GET_ITEM(spec, 1), &failed);
    if (v == NULL) return failed ? -1 : 0;
    if (PyLong_CheckExact(v)) {
        long x;
        if (!c_int(v, &x)) return -1;
        if (how == HOW_ID && x >= 0 && !model_id(t, v, in_post, &x)) return -1;
        return put(r, key) && put(r, V_INT) && put(r, 1) && put(r, x) ? 1 : -1;
    }
    if (how == HOW_ID_LIST && PyList_CheckExact(v)) return id_list(t, v, in_post, key, r) ? 1 : -1;
    if (how == HOW_CUT && v == Py_None) return 0;
    if (how == HOW_RECORDS) return records(t, v, key, r) ? 1 : -1;
    return plain(t, v, key, r) ? 1 : -1;
}

/* CompiledSearch.event_row: 1 written into r, 0 the Python side's */
static int event_row(const Tables *t, PyObject *e, PyObject *params, PyObject *plan, Row *r) {
    PyObject *post = as_dict(get(e, s_post)), *node = get(e, s_node), *fields = PyTuple_GET_ITEM(plan, 1);
    long action = PyLong_AsLong(PyTuple_GET_ITEM(plan, 0)), nd, actor;
    if (post == NULL || !c_int(node, &nd)) return 0;
    PyObject *who = nd == t->harness ? get(params, s_broker) : node;
    if (!model_id(t, who == NULL ? Py_None : who, 1, &actor)) return 0;
    r->n = 0;
    put(r, action); put(r, actor); put(r, 0); put(r, 0); put(r, 0);
    long n = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fields); i++) {
        int w = field(t, params, post, PyTuple_GET_ITEM(fields, i), r);
        if (w < 0) return 0;
        n += w;
    }
    r->v[4] = (int)n;
    if (action == t->handle_fetch) {
        PyObject *answer = get(params, s_records);
        r->v[2] = answer != NULL && PyList_CheckExact(answer) ? (int)PyList_GET_SIZE(answer) : 0;
    } else if (action == t->produce) {
        PyObject *value = get(params, s_value);
        long id = value_id(t, value ? value : Py_None);
        if (id < 0) return 0;
        r->v[3] = (int)id;
    }
    return 1;
}

/* Append r to flat (C ints) and its offset to at; 0 on a memory error (raised) */
static int add(PyObject *flat, PyObject *at, const Row *r) {
    Py_ssize_t used = PyByteArray_GET_SIZE(flat);
    PyObject *offset = PyLong_FromSsize_t(used / (Py_ssize_t)sizeof(int));
    if (offset == NULL) return 0;
    int ok = PyList_Append(at, offset) == 0 && PyByteArray_Resize(flat, used + (Py_ssize_t)sizeof(int) * r->n) == 0;
    Py_DECREF(offset);
    if (ok) memcpy(PyByteArray_AS_STRING(flat) + used, r->v, sizeof(int) * (size_t)r->n);
    return ok;
}

/* The row of event e (1), or 0: the Python side's (replay.py _row's checks, then event_row) */
static int row_of(const Tables *t, PyObject *e, Row *r) {
    if (!PyDict_CheckExact(e)) return 0;
    PyObject *kind = get(e, s_kind);
    PyObject *plan = kind == NULL ? NULL : get(t->kinds, kind);
    if (plan == NULL) return 0; /* judged by event, scoped, or a kind judge.c does not take */
    PyObject *params = as_dict(get(e, s_params));
    if (params == NULL || PyDict_Contains(params, s_retention)) return 0;
    if (plan == Py_None) {
        r->n = 0;
        put(r, t->no_step); put(r, 0); put(r, 0); put(r, 0); put(r, 0);
        return 1;
    }
    return event_row(t, e, params, plan, r);
}

/* Rows of events[first:] until one is the Python side's: its index (len(events) if none),
 * or -1 with a Python exception set (memory) */
Py_ssize_t epochal_rows(PyObject *events, Py_ssize_t first, PyObject *tables, PyObject *values, PyObject *keys,
                        PyObject *flat, PyObject *at) {
    static Row r;
    Tables t;
    if (!interned()) return -1;
    if (!PyList_CheckExact(events) || first < 0 || !PyTuple_CheckExact(tables) || PyTuple_GET_SIZE(tables) != 8 ||
        !PyDict_CheckExact(values) || !PyList_CheckExact(keys) || !PyByteArray_CheckExact(flat) || !PyList_CheckExact(at))
        return first; /* not what the judge hands over: every row the Python side's */
    for (int k = 0; k < 3; k++)
        if (!PyDict_CheckExact(PyTuple_GET_ITEM(tables, k))) return first;
    t.kinds = PyTuple_GET_ITEM(tables, 0);
    t.ids = PyTuple_GET_ITEM(tables, 1);
    t.strings = PyTuple_GET_ITEM(tables, 2);
    t.harness = PyLong_AsLong(PyTuple_GET_ITEM(tables, 3));
    t.unseen = PyLong_AsLong(PyTuple_GET_ITEM(tables, 4));
    t.handle_fetch = PyLong_AsLong(PyTuple_GET_ITEM(tables, 5));
    t.produce = PyLong_AsLong(PyTuple_GET_ITEM(tables, 6));
    t.no_step = PyLong_AsLong(PyTuple_GET_ITEM(tables, 7));
    t.values = values;
    t.keys = keys;
    Py_ssize_t i = first;
    for (; i < PyList_GET_SIZE(events); i++) {
        if (!row_of(&t, PyList_GET_ITEM(events, i), &r)) break;
        if (!add(flat, at, &r)) return -1;
    }
    return i;
}

/* ---------------------------------------------------------------------------------------
 * A group's broker-id map and its registrations' broker epochs: observation.py broker_ids
 * and registration_epochs, read in one pass over the same dicts.  An event it does not read
 * as they do -- not a dict, a missing or non-string kind, a node that is no plain int, params
 * of another type, an int subclass (a bool among a list's ids), an id past 64 bits, more
 * brokers than MAXIDS -- makes the whole answer None: the Python side reads that group (and
 * raises where it raises).  Every id name of the schema is looked up in every event's
 * params: broker_ids skips only names its kind's params cannot hold, which are absent.
 * --------------------------------------------------------------------------------------- */

enum { MAXIDS = 256, MAXASSIGNED = 4096 };

typedef struct { int n; long long v[MAXIDS]; } Seen;

/* seen.add(x) (for x >= 0: "none" is no broker); 0 past MAXIDS */
static int see(Seen *s, long long x) {
    if (x < 0) return 1;
    for (int i = 0; i < s->n; i++)
        if (s->v[i] == x) return 1;
    if (s->n >= MAXIDS) return 0;
    s->v[s->n++] = x;
    return 1;
}

/* x as a plain int (1, *out), another type (0), or the Python side's (-1): an int subclass
 * (a bool: its own rule at each place), an int past 64 bits */
static int plain_int(PyObject *x, long long *out) {
    if (PyLong_CheckExact(x)) {
        int overflow;
        *out = PyLong_AsLongLongAndOverflow(x, &overflow);
        return overflow ? -1 : 1;
    }
    return PyLong_Check(x) ? -1 : 0;
}

/* The ids one event mentions (broker_ids' loop body), the first preferred-replica election's
 * replicas, a registration's broker epoch: 1, or 0 for the Python side */
static int group_event(PyObject *e, PyObject *scalars, PyObject *lists, PyObject *registrations, Seen *seen,
                       PyObject **preferred, PyObject *epochs) {
    long long x;
    if (!PyDict_CheckExact(e)) return 0;
    PyObject *node = get(e, s_node), *kind = get(e, s_kind), *params = get(e, s_params);
    if (node == NULL || plain_int(node, &x) != 1 || !see(seen, x)) return 0;
    if (kind == NULL || !PyUnicode_CheckExact(kind)) return 0;
    if (params == NULL || params == Py_None) return 1;
    if (!PyDict_CheckExact(params)) return 0;
    if (PyDict_GET_SIZE(params) == 0) return 1;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(scalars); k++) {
        PyObject *v = get(params, PyTuple_GET_ITEM(scalars, k));
        if (v == NULL || PyBool_Check(v)) continue; /* (a bool is no broker id here) */
        int is = plain_int(v, &x);
        if (is < 0 || (is == 1 && !see(seen, x))) return 0;
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(lists); k++) {
        PyObject *v = get(params, PyTuple_GET_ITEM(lists, k));
        if (v == NULL || !PyList_Check(v)) continue;
        if (!PyList_CheckExact(v)) return 0;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
            int is = plain_int(PyList_GET_ITEM(v, i), &x); /* (a bool counts here: the Python side's) */
            if (is < 0 || (is == 1 && !see(seen, x))) return 0;
        }
    }
    if (*preferred == NULL && PyUnicode_Compare(kind, s_elect) == 0) {
        PyObject *reason = get(params, s_reason), *replicas = get(params, s_replicas);
        if (reason != NULL && !(PyUnicode_CheckExact(reason) || reason == Py_None || PyLong_CheckExact(reason) ||
                                PyBool_Check(reason) || PyFloat_CheckExact(reason) || PyList_CheckExact(reason) ||
                                PyDict_CheckExact(reason)))
            return 0; /* == "preferred" of a type JSON does not give: the Python side's */
        if (reason != NULL && PyUnicode_CheckExact(reason) && PyUnicode_Compare(reason, s_preferred) == 0 &&
            replicas != NULL && PyList_Check(replicas)) {
            if (!PyList_CheckExact(replicas)) return 0;
            if (PyList_GET_SIZE(replicas) > 0) *preferred = replicas;
        }
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(registrations); k++) {
        if (PyUnicode_Compare(kind, PyTuple_GET_ITEM(registrations, k)) != 0) continue;
        PyObject *epoch = get(params, s_broker_epoch);
        if (epoch == NULL || !PyLong_Check(epoch)) return 1;
        if (!PyLong_CheckExact(epoch) && !PyBool_Check(epoch)) return 0;
        PyObject *n = PyBool_Check(epoch) ? PyLong_FromLong(epoch == Py_True) : (Py_INCREF(epoch), epoch); /* int(v) */
        int ok = n != NULL && PyList_Append(epochs, n) == 0;
        Py_XDECREF(n);
        return ok ? 1 : -1;
    }
    return 1;
}

static int ascending(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* broker_ids' answer from the sorted ids and the preferred election's replicas
 * (_preferred_first): NULL with an exception (memory), Py_None (new) for the Python side */
static PyObject *id_map(const Seen *seen, PyObject *preferred) {
    static long long order[MAXASSIGNED + MAXIDS]; /* (called with the interpreter's lock held) */
    Py_ssize_t n = 0, assigned = preferred == NULL ? 0 : PyList_GET_SIZE(preferred);
    if (assigned > MAXASSIGNED) Py_RETURN_NONE;
    int in_order = 1;
    for (Py_ssize_t i = 0; i < assigned; i++) {
        long long x, before = 0;
        PyObject *item = PyList_GET_ITEM(preferred, i);
        if (PyBool_Check(item) || plain_int(item, &x) != 1) Py_RETURN_NONE; /* sorted() of other things: Python's */
        if (i > 0) {
            plain_int(PyList_GET_ITEM(preferred, i - 1), &before);
            in_order = in_order && before <= x;
        }
        for (int j = 0; j < seen->n; j++)
            if (seen->v[j] == x) { order[n++] = x; break; } /* first: the assigned replicas the trace names */
    }
    if (in_order) n = 0; /* an assignment in id order renames nothing */
    Py_ssize_t first = n;
    for (int j = 0; j < seen->n; j++) {
        int named = 0;
        for (Py_ssize_t i = 0; i < first && !named; i++) named = order[i] == seen->v[j];
        if (!named) order[n++] = seen->v[j];
    }
    PyObject *ids = PyDict_New();
    for (Py_ssize_t i = 0; ids != NULL && i < n; i++) { /* {real: i for i, real in enumerate(...)} */
        PyObject *real = PyLong_FromLongLong(order[i]), *model = PyLong_FromSsize_t(i);
        if (real == NULL || model == NULL || PyDict_SetItem(ids, real, model) != 0) Py_CLEAR(ids);
        Py_XDECREF(real);
        Py_XDECREF(model);
    }
    return ids;
}

/* (broker_ids(events), registration_epochs(events)), or None: the Python side's to read.
 * names: (the scalar id params, the list ones, the registrations' kinds) as observation.py
 * names them.  NULL with an exception set on a memory error. */
PyObject *epochal_group_ids(PyObject *events, PyObject *names) {
    if (!interned()) return NULL;
    if (!PyList_CheckExact(events) || !PyTuple_CheckExact(names) || PyTuple_GET_SIZE(names) != 3) Py_RETURN_NONE;
    PyObject *scalars = PyTuple_GET_ITEM(names, 0), *lists = PyTuple_GET_ITEM(names, 1),
             *registrations = PyTuple_GET_ITEM(names, 2);
    for (int k = 0; k < 3; k++) {
        PyObject *those = PyTuple_GET_ITEM(names, k);
        if (!PyTuple_CheckExact(those)) Py_RETURN_NONE;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(those); i++)
            if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(those, i))) Py_RETURN_NONE;
    }
    static Seen seen;
    seen.n = 0;
    PyObject *preferred = NULL, *epochs = PyList_New(0);
    if (epochs == NULL) return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(events); i++) {
        int read = group_event(PyList_GET_ITEM(events, i), scalars, lists, registrations, &seen, &preferred, epochs);
        if (read <= 0) {
            Py_DECREF(epochs);
            if (read < 0) return NULL;
            Py_RETURN_NONE;
        }
    }
    qsort(seen.v, (size_t)seen.n, sizeof seen.v[0], ascending);
    PyObject *ids = id_map(&seen, preferred);
    if (ids == NULL || ids == Py_None || PyList_Sort(epochs) != 0) {
        Py_DECREF(epochs);
        return ids;
    }
    PyObject *both = PyTuple_Pack(2, ids, epochs);
    Py_DECREF(ids);
    Py_DECREF(epochs);
    return both;
}

/* ---------------------------------------------------------------------------------------
 * Valid events recognised: traces/schema.py's generated check of one event (_event_check,
 * what validate asks first) over a file's decoded objects, each one it finds valid
 * normalized in place as normalize does.  It only ever says "valid": an object it does not
 * find valid -- invalid, or of a type JSON does not give (a str subclass) -- is the Python
 * side's, whose rules word the reason (and may yet find it valid).
 * --------------------------------------------------------------------------------------- */

/* schema.py's types, in the order compiled_batch.SCHEMA_TYPES names them */
enum { T_STRING, T_INT, T_BOOL, T_NUMBER, T_OBJECT, T_VALUE, T_LIST_INT, T_LIST_RECORD };

static int scalar(PyObject *v) { /* type(v) in _SCALARS */
    return PyUnicode_CheckExact(v) || PyLong_CheckExact(v) || PyFloat_CheckExact(v) || PyBool_Check(v) || v == Py_None;
}

static int of_type(PyObject *v, long type) {
    switch (type) {
    case T_STRING: return PyUnicode_CheckExact(v);
    case T_INT: return PyLong_CheckExact(v);
    case T_BOOL: return PyBool_Check(v);
    case T_NUMBER: return PyLong_CheckExact(v) || PyFloat_CheckExact(v);
    case T_OBJECT: return PyDict_CheckExact(v);
    case T_VALUE: return scalar(v);
    case T_LIST_INT:
        if (!PyList_CheckExact(v)) return 0;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++)
            if (!PyLong_CheckExact(PyList_GET_ITEM(v, i))) return 0;
        return 1;
    case T_LIST_RECORD:
        if (!PyList_CheckExact(v)) return 0;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
            PyObject *r = PyList_GET_ITEM(v, i);
            if (!PyList_CheckExact(r) || PyList_GET_SIZE(r) != 3 || !PyLong_CheckExact(PyList_GET_ITEM(r, 0)) ||
                !PyLong_CheckExact(PyList_GET_ITEM(r, 1)) || !scalar(PyList_GET_ITEM(r, 2)))
                return 0;
        }
        return 1;
    }
    return 0;
}

/* _field_lines: every spec (name, type, nullable, required) of d holds */
static int fields_hold(PyObject *d, PyObject *specs) {
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(specs); k++) {
        PyObject *spec = PyTuple_GET_ITEM(specs, k);
        PyObject *v = get(d, PyTuple_GET_ITEM(spec, 0));
        int nullable = PyTuple_GET_ITEM(spec, 2) == Py_True, required = PyTuple_GET_ITEM(spec, 3) == Py_True;
        if (v == NULL) {
            if (required) return 0;
        } else if (v == Py_None) {
            if (required && !nullable) return 0;
        } else if (!of_type(v, PyLong_AsLong(PyTuple_GET_ITEM(spec, 1)))) {
            return 0;
        }
    }
    return 1;
}

static int negative(PyObject *v) { /* v < 0, v a plain int */
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    return overflow < 0 || (overflow == 0 && x < 0);
}

/* validate(obj) is None (1), or the Python side's to say (0) */
static int valid_event(PyObject *obj, PyObject *schema_id, PyObject *top, PyObject *kinds) {
    if (!PyDict_CheckExact(obj)) return 0;
    PyObject *kind = get(obj, s_kind), *schema = get(obj, s_schema);
    if (kind == NULL || !PyUnicode_CheckExact(kind) || schema == NULL || !PyUnicode_CheckExact(schema) ||
        PyUnicode_Compare(schema, schema_id) != 0)
        return 0;
    PyObject *of_kind = get(kinds, kind); /* (partition scope, params' specs, post's specs) */
    if (of_kind == NULL || !fields_hold(obj, top)) return 0;
    PyObject *seq = get(obj, s_seq), *clock = get(obj, s_clock), *params = get(obj, s_params),
             *post = get(obj, s_post);
    if (seq == NULL || clock == NULL || !PyLong_CheckExact(seq) || !PyLong_CheckExact(clock) || negative(seq) ||
        negative(clock))
        return 0;
    if (PyTuple_GET_ITEM(of_kind, 0) == Py_True) {
        PyObject *topic = get(obj, s_topic), *partition = get(obj, s_partition);
        if (topic == NULL || topic == Py_None || partition == NULL || !PyLong_CheckExact(partition) ||
            negative(partition))
            return 0;
    }
    if (params == NULL || !PyDict_CheckExact(params) || !fields_hold(params, PyTuple_GET_ITEM(of_kind, 1))) return 0;
    if (post == NULL || post == Py_None) post = none; /* (an empty dict) */
    return PyDict_CheckExact(post) && fields_hold(post, PyTuple_GET_ITEM(of_kind, 2));
}

/* normalize(obj), in place: 0 with an exception on a memory error */
static int normalized(PyObject *obj) {
    PyObject *names[3] = {s_zxid, s_topic, s_partition};
    for (int k = 0; k < 3; k++)
        if (PyDict_SetDefault(obj, names[k], Py_None) == NULL) return 0;
    PyObject *post = get(obj, s_post);
    if (post != NULL && post != Py_None) return 1;
    PyObject *empty = PyDict_New();
    int ok = empty != NULL && PyDict_SetItem(obj, s_post, empty) == 0;
    Py_XDECREF(empty);
    return ok;
}

int epochal_event_recognised(PyObject *obj, PyObject *tables) {
    if (!interned()) return -1;
    if (!valid_event(obj, PyTuple_GET_ITEM(tables, 0), PyTuple_GET_ITEM(tables, 1), PyTuple_GET_ITEM(tables, 2)))
        return 0;
    return normalized(obj) ? 1 : -1;
}

int epochal_event_tables(PyObject *tables) {
    return PyTuple_CheckExact(tables) && PyTuple_GET_SIZE(tables) == 3 && PyUnicode_CheckExact(PyTuple_GET_ITEM(tables, 0)) &&
           PyTuple_CheckExact(PyTuple_GET_ITEM(tables, 1)) && PyDict_CheckExact(PyTuple_GET_ITEM(tables, 2));
}

/* For each of objs: valid[i] = 1 where validate(objs[i]) is None, objs[i] then normalized; 0
 * where it is the Python side's to say.  tables: (SCHEMA_ID, FIELDS' specs, kind -> (partition
 * scope, params' specs, post's specs)), each spec (name, type, nullable, required).  Returns
 * how many it found valid, or -1 with an exception set (memory). */
Py_ssize_t epochal_valid_events(PyObject *objs, PyObject *tables, PyObject *valid) {
    if (!interned()) return -1;
    if (!PyList_CheckExact(objs) || !PyByteArray_CheckExact(valid) || PyByteArray_GET_SIZE(valid) != PyList_GET_SIZE(objs) ||
        !epochal_event_tables(tables))
        return 0; /* not what the reader hands over: every object the Python side's */
    char *flags = PyByteArray_AS_STRING(valid);
    Py_ssize_t n = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(objs); i++) {
        int ok = epochal_event_recognised(PyList_GET_ITEM(objs, i), tables);
        if (ok < 0) return -1;
        flags[i] = (char)ok;
        n += ok;
    }
    return n;
}
