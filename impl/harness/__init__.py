"""The harness: everything that starts, drives, watches and judges the system of ``impl.node``.

Its own layers, top to bottom (the import contract in ``pyproject.toml`` checks them):
``cli`` (the ``epochal`` command), ``report`` (the HTML reports), ``demo`` / ``chaos`` /
``drive`` (the runs), ``recordings`` (trace recordings of a run), ``cluster`` / ``relay``
(local clusters of real processes, and the relay that holds and reorders their messages).
"""
