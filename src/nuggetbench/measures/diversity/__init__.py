"""diversity."""
