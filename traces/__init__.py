"""The language-neutral trace format: vocabulary, recorder and reader.

A trace is a sequence of JSON objects (one per line), each one *event*: a state
change one node made, named after the model action it corresponds to.  See
``traces/SCHEMA.md`` for the normative description a port can be written from.
"""

SCHEMA_VERSION = 1
SCHEMA_ID = f"epochal.trace/{SCHEMA_VERSION}"
