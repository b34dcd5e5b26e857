"""dpportal: a self-hosted platform for differentially private synthetic data."""

__version__ = "0.1.0"

from .celery import app as celery_app  # noqa: E402  (Celery finds tasks when Django starts)

__all__ = ["celery_app", "__version__"]
