"""One package per mechanism: ``__init__.py`` holds the mechanism class (the only code that reads private
data, in ``fit``), ``guide.py`` what is known about it from public inputs alone (accuracy predictor,
run-time model, steward help, measured model quality). ``mechanisms.registry`` lists the packages."""
