"""Checkers: each explores the model of ``model`` and judges each state by ``properties.safety``.

* ``bfs``          -- exhaustive breadth-first search with shortest counterexamples
* ``reduction``    -- partial-order reduction (persistent sets) for that search
* ``symmetry``     -- broker-id permutations and canonical states
* ``budget``       -- the memory budget a search stops at, and how it is measured
* ``native``       -- the compiled twin of the search (``native/``, C), run as a subprocess
* ``symbolic``     -- the z3 encoding: inductive proofs and bounded model checking
* ``fuzz``         -- the Hypothesis state machine over the same actions
* ``scenarios``    -- plays ``model.scenarios``' named runs, stopping at the first violation
"""
