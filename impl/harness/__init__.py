"""The harness: local clusters of real processes, faults, chaos, recordings and the demo."""
