# dpportal image: the web server (gunicorn) and the Celery worker run from this same image.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    DPPORTAL_DATA_DIR=/data

WORKDIR /app
COPY requirements.txt .
RUN pip install -r requirements.txt

COPY . .
# Static files are collected at build time (served by whitenoise); the key is a build-time dummy.
RUN DJANGO_SECRET_KEY=collectstatic-only DPPORTAL_DATA_DIR=/tmp/build-data python manage.py collectstatic --noinput \
    && rm -rf /tmp/build-data \
    && useradd --system --uid 10001 --home-dir /app dpportal \
    && mkdir -p /data && chown dpportal /data

USER dpportal
VOLUME ["/data"]
EXPOSE 8000
# gunicorn on a Unix socket behind dpportal's buffering front (slow clients never hold its threads)
CMD ["sh", "-c", "mkdir -p /data/uploads/tmp && { gunicorn dpportal.wsgi:application --bind unix:/data/web.sock --workers 3 --threads 4 --timeout 120 --access-logfile - & } && exec python -m dpportal.front --listen 0.0.0.0:8000 --upstream /data/web.sock --spool-dir /data/uploads/tmp"]
