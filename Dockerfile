# The product's image: gunicorn by default (`CMD`), the Celery worker with `scripts/serve worker`
# (docker-compose.yml runs both). Code installed once; static files collected at build; runs as an unprivileged user.
# .dockerignore keeps var/ (the development secret key and database), .venv and .git out of the build context.
FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 STATIC_ROOT=/app/staticfiles CAB_VAR_DIR=/app/var
WORKDIR /app
# Dependencies first, exactly as locked (versions and hashes: requirements/base.lock, made by scripts/lock), so a
# code change does not reinstall them.
COPY requirements/base.lock ./requirements/
RUN pip install --no-cache-dir --require-hashes -r requirements/base.lock
# The code, installed once (in place: the package's metadata, e.g. its version, without a second copy).
COPY . .
# The commit the image is built from, which every metrics report states (there is no .git in the image):
# docker build --build-arg CAB_COMMIT=$(git rev-parse HEAD) .
ARG CAB_COMMIT=""
ENV CAB_COMMIT=$CAB_COMMIT
RUN pip install --no-cache-dir --no-deps -e . \
    && DJANGO_ENV=production ALLOWED_HOSTS=build REDIS_URL=redis://build:6379/0 \
       DATABASE_URL=postgres://build@build:5432/build \
       SECRET_KEY=collectstatic-at-build-time-only-never-used-to-sign-anything-000000 \
       python manage.py collectstatic --noinput -v 0 \
    && useradd --create-home --uid 10001 cab && mkdir -p /app/var && chown cab /app/var
USER cab
EXPOSE 8000
CMD ["scripts/serve", "web"]
