FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 STATIC_ROOT=/app/staticfiles
WORKDIR /app
COPY pyproject.toml README.md LICENSE ./
COPY cab ./cab
COPY annotation ./annotation
COPY benchmark ./benchmark
COPY metrics ./metrics
RUN pip install --no-cache-dir .
COPY . .
RUN useradd --create-home cab && mkdir -p /app/var /app/staticfiles && chown -R cab /app/var /app/staticfiles
USER cab
EXPOSE 8000
