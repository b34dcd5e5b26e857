"""Checks of the product's predictions (recommendation, run time, model quality, bounds) against measurements."""
