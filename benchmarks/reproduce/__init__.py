"""Per-mechanism reproductions of their papers' figures and the mechanisms' speed and memory."""
