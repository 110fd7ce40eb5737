"""dense."""
