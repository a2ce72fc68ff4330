"""Blindspot settings, read from the environment (django-environ); no side effects at import.

The embedded demo default is a SQLite file under ``var/`` with eager jobs; CI and production set
``DATABASE_URL`` (PostgreSQL through psycopg 3) and ``CELERY_BROKER_URL`` (Redis).
"""

from datetime import timedelta
from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env(
    DEBUG=(bool, False),
    ALLOWED_HOSTS=(list, ["localhost", "127.0.0.1", "[::1]", "testserver"]),
    CSRF_TRUSTED_ORIGINS=(list, []),
    CELERY_TASK_ALWAYS_EAGER=(bool, False),
    SECURE=(bool, False),
)
env_file = env.str("BLINDSPOT_ENV_FILE", default=str(BASE_DIR / ".env"))
if Path(env_file).is_file():
    environ.Env.read_env(env_file)

DEBUG = env("DEBUG")
SECRET_KEY = env.str("SECRET_KEY", default="insecure-demo-key-change-me" if DEBUG else "")
if not SECRET_KEY:
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured("Set SECRET_KEY (or DEBUG=true for the local demo).")
ALLOWED_HOSTS = env("ALLOWED_HOSTS")
CSRF_TRUSTED_ORIGINS = env("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "django_htmx",
    "annotator",
    "curation",
    "evaluation",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "blindspot.urls"

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
                "django.template.context_processors.i18n",
                "annotator.roles.roles_context",
            ],
        },
    },
]

WSGI_APPLICATION = "blindspot.wsgi.application"

VAR_DIR = Path(env.str("BLINDSPOT_VAR_DIR", default=str(BASE_DIR / "var")))
DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'blindspot.sqlite3'}"),
}
_SQLITE = DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3"
# Persistent connections on PostgreSQL: a new one per request costs a backend start-up and a
# cold catalog cache (planning the annotators' statements takes ~1 ms instead of ~0.1 ms).
DATABASES["default"].setdefault(
    "CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=0 if _SQLITE else 60)
)
if _SQLITE:
    # The demo serialises writers: wait for the lock instead of failing, take it at BEGIN.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 20, "transaction_mode": "IMMEDIATE"}
    )

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文"), ("hi", "हिन्दी")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env.str("STATIC_ROOT", default=str(VAR_DIR / "static")))
STATICFILES_DIRS = [BASE_DIR / "static"]
MEDIA_URL = "media/"
MEDIA_ROOT = Path(env.str("MEDIA_ROOT", default=str(VAR_DIR / "media")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": env.str(
            "STATICFILES_STORAGE",
            default="django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage",
        )
    },
}
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("DATA_UPLOAD_MAX_MEMORY_SIZE", default=50 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Security: production (DEBUG off) passes `manage.py check --deploy`.
SECURE = env("SECURE") or not DEBUG
SESSION_COOKIE_SECURE = SECURE
CSRF_COOKIE_SECURE = SECURE
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=SECURE)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000 if SECURE else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE
SECURE_HSTS_PRELOAD = SECURE
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "annotator.auth.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "annotator.api.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Blindspot API",
    "DESCRIPTION": "Task queues, annotation and jobs for building vision-centric VLM benchmarks.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Several models have a ``status`` with its own choices; name each enum after its model.
    "ENUM_NAME_OVERRIDES": {
        "QueueStatusEnum": "annotator.models.TaskQueue.Status",
        "JobStatusEnum": "annotator.models.Job.Status",
    },
}

# Celery: Redis broker; eager in the embedded demo and in tests that do not need a worker.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="redis://127.0.0.1:6379/0")
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = env("CELERY_TASK_ALWAYS_EAGER")
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE = {
    "expire-leases": {"task": "annotator.expire_leases", "schedule": timedelta(seconds=30)},
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="WARNING")},
}

# --- Curation: image assets, corpora, scorers and the LLM gateway ---------------------------
# S3-compatible media storage (AWS, MinIO, R2, …) when a bucket is named; local disk otherwise.
if env.str("AWS_STORAGE_BUCKET_NAME", default=""):
    STORAGES["default"] = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": env.str("AWS_STORAGE_BUCKET_NAME"),
            "endpoint_url": env.str("AWS_S3_ENDPOINT_URL", default=None),
            "region_name": env.str("AWS_S3_REGION_NAME", default=None),
            "access_key": env.str("AWS_ACCESS_KEY_ID", default=None),  # None: boto3's own chain
            "secret_key": env.str("AWS_SECRET_ACCESS_KEY", default=None),
            "custom_domain": env.str("AWS_S3_CUSTOM_DOMAIN", default=None),
            "querystring_auth": env.bool("AWS_QUERYSTRING_AUTH", default=True),
            "file_overwrite": True,  # names are content hashes: same name, same bytes
            "default_acl": None,
        },
    }
BLINDSPOT_MAX_IMAGE_PIXELS = env.int("BLINDSPOT_MAX_IMAGE_PIXELS", default=40_000_000)
BLINDSPOT_MAX_IMAGE_BYTES = env.int("BLINDSPOT_MAX_IMAGE_BYTES", default=20 * 1024 * 1024)
BLINDSPOT_MAX_CORPUS_UPLOAD_BYTES = env.int(
    "BLINDSPOT_MAX_CORPUS_UPLOAD_BYTES", default=4 * 1024**3
)
BLINDSPOT_MAX_MANIFEST_BYTES = env.int("BLINDSPOT_MAX_MANIFEST_BYTES", default=200 * 1024**2)
BLINDSPOT_MAX_ARCHIVE_MEMBERS = env.int("BLINDSPOT_MAX_ARCHIVE_MEMBERS", default=500_000)
BLINDSPOT_MAX_ARCHIVE_UNPACKED_BYTES = env.int(
    "BLINDSPOT_MAX_ARCHIVE_UNPACKED_BYTES", default=16 * 1024**3
)
BLINDSPOT_EXPORTS_KEEP = env.int("BLINDSPOT_EXPORTS_KEEP", default=3)  # files per export variant
BLINDSPOT_EMBEDDINGS_DIR = Path(
    env.str("BLINDSPOT_EMBEDDINGS_DIR", default=str(VAR_DIR / "embeddings"))
)
BLINDSPOT_CLIP_CACHE_DIR = env.str("BLINDSPOT_CLIP_CACHE_DIR", default="") or None
BLINDSPOT_TORCH_THREADS = env.int("BLINDSPOT_TORCH_THREADS", default=0)  # 0: torch's default
# Default OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, …); empty: the offline drafter.
BLINDSPOT_LLM_BASE_URL = env.str("BLINDSPOT_LLM_BASE_URL", default="")
BLINDSPOT_LLM_API_KEY = env.str("BLINDSPOT_LLM_API_KEY", default="")
BLINDSPOT_LLM_MODEL = env.str("BLINDSPOT_LLM_MODEL", default="gpt-4o-mini")
BLINDSPOT_LLM_BACKOFF_BASE_S = env.float("BLINDSPOT_LLM_BACKOFF_BASE_S", default=1.0)
BLINDSPOT_LLM_BACKOFF_MAX_S = env.float("BLINDSPOT_LLM_BACKOFF_MAX_S", default=30.0)
BLINDSPOT_LLM_RETRY_AFTER_MAX_S = env.float("BLINDSPOT_LLM_RETRY_AFTER_MAX_S", default=60.0)
BLINDSPOT_LLM_ENV_KEYS = env.list("BLINDSPOT_LLM_ENV_KEYS", default=[])
# Folder where evaluation items' image file names are looked up (model runs); empty: none.
BLINDSPOT_EVAL_IMAGE_ROOT = env.str("BLINDSPOT_EVAL_IMAGE_ROOT", default="")
