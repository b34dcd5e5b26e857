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
    && mkdir -p /data /srv/static && chown dpportal /data /srv/static

USER dpportal
VOLUME ["/data"]
EXPOSE 8000
# Alone (`docker run`): waitress, which reads each request whole before Django (dpportal/serve.py). The
# Compose file runs gunicorn behind nginx instead (deploy/nginx.conf), and the workers from this image.
CMD ["python", "-m", "dpportal.serve", "--listen", "0.0.0.0:8000"]
