"""Self-contained HTML reports: what a run did, drawn as a space-time (Lamport) diagram.

One page per report, with inline SVG, CSS and JavaScript only -- no network access, no
external font or script -- so it opens from a CI artifact or an e-mail as it is.
"""
