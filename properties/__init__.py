"""The safety properties and the checkers that verify them against the model.

* ``properties.safety``   -- the ten properties, defined once (each names what it reads)
* ``properties.checkers`` -- every way of checking them: breadth-first search, partial-order
  reduction, symmetry, the compiled twin, z3 proofs and Hypothesis fuzzing
"""
