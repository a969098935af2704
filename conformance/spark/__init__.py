"""The conformance job on Spark: read, order, group, judge, write verdicts."""
