"""Guidance from PUBLIC inputs only (the confirmed schema, the public row count, epsilon, delta, parameters):
recommendation and accuracy predictions, run-time estimates, steward help, measured model quality. Nothing
here reads a table; each mechanism's own numbers live in its package's ``guide.py``."""
