"""The trace judge: observation matching of recorded events against the model."""
