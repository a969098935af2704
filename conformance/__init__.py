"""Conformance: is a recorded run of the implementation a run of the model?

* ``conformance.judge`` -- the trace judge over the model (observation matching, internal-step
  search, memo, export of model runs as traces, diagnosis by protocol variant)
* ``conformance.spark`` -- the PySpark job that orders, groups and judges traces at scale
* ``mutations``, ``broken_samples`` -- known-bad traces, made from good ones, for testing judges
"""
