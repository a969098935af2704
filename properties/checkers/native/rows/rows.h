/*
 * rows.h: what lines.c (the reader of a file's JSON lines) takes from rows.c -- the one
 * recognition of a valid event, so the reader holds no copy of the schema's rules.
 */
#ifndef EPOCHAL_ROWS_H
#define EPOCHAL_ROWS_H

#include <Python.h>

/* Whether tables is what the reader hands over: (SCHEMA_ID, FIELDS' specs, kind -> specs) */
int epochal_event_tables(PyObject *tables);

/* validate(obj) is None: 1, obj then normalized in place; 0: the Python side's to say; -1 with
 * an exception set (memory).  tables as epochal_event_tables checks them. */
int epochal_event_recognised(PyObject *obj, PyObject *tables);

#endif
