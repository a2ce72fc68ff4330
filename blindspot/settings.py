"""Blindspot settings, read from the environment (django-environ); no side effects at import.

The embedded demo default is a SQLite file under ``var/`` with eager jobs; CI and production set
``DATABASE_URL`` (PostgreSQL through psycopg 3) and ``CELERY_BROKER_URL`` (Redis).
"""

from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env(
    DEBUG=(bool, False),
    ALLOWED_HOSTS=(list, ["localhost", "127.0.0.1", "[::1]", "testserver"]),
    CSRF_TRUSTED_ORIGINS=(list, []),
    CELERY_TASK_ALWAYS_EAGER=(bool, False),
)
env_file = env.str("BLINDSPOT_ENV_FILE", default=str(BASE_DIR / ".env"))
if Path(env_file).is_file():
    environ.Env.read_env(env_file)

DEBUG = env("DEBUG")
SECRET_KEY = env.str("SECRET_KEY", default="insecure-demo-key-change-me" if DEBUG else "")
if not SECRET_KEY:
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
    "django.contrib.postgres",  # OpClass in index expressions (the task browser's trigram index)
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "axes",
    "annotator",
    "curation",
    "evaluation",
    # The recipes: each a Django app whose config is a RecipeConfig (curation/recipes/framework).
    "curation.recipes.naturalbench",
    "curation.recipes.vhexpansion",
    "curation.recipes.visit",
    "curation.recipes.vlind",
    "curation.recipes.hunt",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Before anything reads the body or the session cookie (platform/edge.py): 413 over the
    # body limit; 400 for NUL characters and lone surrogates in the path, query string or form.
    "annotator.platform.edge.BodyLimitMiddleware",
    "annotator.platform.edge.TextGuardMiddleware",
    # PostgreSQL or Redis down: 503 + Retry-After (JSON under /api/), never a 500 page; a
    # session that cannot be saved then keeps the answer (platform/outage.py).
    "annotator.platform.outage.ServiceDownMiddleware",
    "annotator.platform.outage.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    # Django's, with the user and their roles read in one statement (platform/auth.py).
    "annotator.platform.auth.SessionAuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # A job the broker could not take: 503 + Retry-After under /api/, a warning on pages.
    "annotator.platform.outage.OutageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "blindspot.middleware.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last: it turns a login refused by django-axes into the lockout page (or JSON).
    "axes.middleware.AxesMiddleware",
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
                "annotator.platform.roles.roles_context",
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


def _conn_max_age() -> int | None:
    """CONN_MAX_AGE: seconds, or "none" for connections kept for the process's life."""
    raw = env.str("CONN_MAX_AGE", default="").strip().lower()
    if not raw:
        return 0 if _SQLITE else None
    if raw == "none":
        return None
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(
            f"CONN_MAX_AGE must be a number of seconds or 'none', not {raw!r}."
        ) from None


# Persistent connections on PostgreSQL, kept for the process's life: a new one costs a backend
# start-up and a cold catalog cache (planning the annotators' statements takes ~1 ms instead of
# ~0.1 ms). With a 60 s age every thread of gunicorn and of a Celery threads worker connected
# again each minute: at a hunt's pace one request in several paid it, and those made the tail
# (benchmarks/hunt.py, 20 workers thinking ~10 s: p99 119–142 ms with 60 s, 73–80 ms without).
# A broken connection is still closed after the request that found it (Django).
DATABASES["default"].setdefault("CONN_MAX_AGE", _conn_max_age())
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
# Files served at the site's root by WhiteNoise: /favicon.ico (browsers ask for it on pages
# without an icon link: the API's JSON, the API docs).
WHITENOISE_ROOT = BASE_DIR / "blindspot" / "root"
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
# Every request body, file uploads and the API included, answers 413 above this (platform/edge.py);
# the URL names below may be larger by the sum of the settings they name (their views check each
# file against its own limit again).
BLINDSPOT_MAX_REQUEST_BYTES = env.int(
    "BLINDSPOT_MAX_REQUEST_BYTES", default=DATA_UPLOAD_MAX_MEMORY_SIZE
)
BLINDSPOT_LARGE_UPLOADS = {
    "curator-project-corpora": (
        "BLINDSPOT_MAX_CORPUS_UPLOAD_BYTES",
        "BLINDSPOT_MAX_MANIFEST_BYTES",
    ),
    "curator-vhx-new": ("BLINDSPOT_MAX_CORPUS_UPLOAD_BYTES",),
}
# A line of a JSONL, CSV or caption file longer than this is refused with its line number.
BLINDSPOT_MAX_LINE_BYTES = env.int("BLINDSPOT_MAX_LINE_BYTES", default=4 * 1024**2)
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Security: production (DEBUG off) passes `manage.py check --deploy`.
# SECURE unset follows `not DEBUG`; SECURE=0 or 1 is obeyed either way (SECURE=0 with DEBUG off is
# a lab install on plain HTTP: no HTTPS redirect, no HSTS, no secure-only cookies).
SECURE = env.bool("SECURE", default=not DEBUG)
SESSION_COOKIE_SECURE = SECURE
# Django's database sessions, read in one hand-written statement (platform/sessions.py).
SESSION_ENGINE = "annotator.platform.sessions"
CSRF_COOKIE_SECURE = SECURE
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=SECURE)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000 if SECURE else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE
SECURE_HSTS_PRELOAD = SECURE
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

# Login throttling (django-axes): AXES_FAILURE_LIMIT wrong passwords for one user name, or from one
# client address, lock that user name, or that address, separately, for AXES_COOLOFF_MINUTES after
# the last failed attempt. It covers every password check: the login page, /admin/login/ and
# POST /api/token/. Unlock early with `manage.py axes_reset_username <name>` or
# `manage.py axes_reset_ip <address>` (`manage.py axes_reset`: everyone).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.float("AXES_COOLOFF_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # either one alone locks
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "annotator.platform.login.lockout_response"
AXES_CLIENT_IP_CALLABLE = "annotator.platform.login.client_ip"
# Reverse proxies in front of the app that append to X-Forwarded-For (0: use REMOTE_ADDR). Behind
# one proxy, without this every client shares the proxy's address and one address's lockout.
BLINDSPOT_PROXY_COUNT = env.int("BLINDSPOT_PROXY_COUNT", default=0)

# Content-Security-Policy (django-csp): the app's pages carry no inline script or style; htmx
# runs with eval off and its indicator styles in our stylesheet. Images may also come from the S3
# bucket's host and from CSP_IMG_HOSTS (task payloads that link images on another server).
CSP_IMG_HOSTS = env.list("CSP_IMG_HOSTS", default=[])

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "annotator.platform.auth.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "annotator.platform.api.exception_handler",
    # DRF's parsers, refusing NUL characters and lone surrogates with their field
    # (annotator/platform/edge.py).
    "DEFAULT_PARSER_CLASSES": [
        "annotator.platform.edge.JSONParser",
        "annotator.platform.edge.FormParser",
        "annotator.platform.edge.MultiPartParser",
    ],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Blindspot API",
    "DESCRIPTION": "Task queues, annotation and jobs for building vision-centric VLM benchmarks.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI and ReDoc from the app's static files (drf-spectacular-sidecar): they work
    # offline and satisfy the CSP. Schema and docs are for logged-in users (blindspot/urls.py).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Several models have a ``status`` with its own choices; name each enum after its model.
    "ENUM_NAME_OVERRIDES": {
        "QueueStatusEnum": "annotator.models.TaskQueue.Status",
        "JobStatusEnum": "annotator.platform.models.Job.Status",
    },
}

# Celery: Redis broker; eager in the embedded demo and in tests that do not need a worker.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="redis://127.0.0.1:6379/0")
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = env("CELERY_TASK_ALWAYS_EAGER")
CELERY_TASK_EAGER_PROPAGATES = True
# With eager jobs: run them in a thread of the web process (annotator.platform.background), so a
# request that starts one answers at once and its progress bar moves. `make run` sets it for
# the demo's server; off, eager jobs run inside the request that starts them (tests, commands).
BLINDSPOT_JOBS_IN_BACKGROUND = env.bool("BLINDSPOT_JOBS_IN_BACKGROUND", default=False)
# Lost jobs. A job's message is acknowledged only when the job ends (acks_late), and put back
# when its pool child dies (reject_on_worker_lost); a worker holds one message per process
# (prefetch 1), so a dead worker strands as few jobs as possible. A worker killed as a whole
# never rejects anything: on Redis its messages come back only after the visibility timeout,
# and they also come back after it while the job still runs. So recovery does not rest on it:
# the worker (``annotator.platform.worker.run_job``) beats on the Job row every
# BLINDSPOT_JOB_HEARTBEAT_S seconds, the beat task ``annotator.sweep_lost_jobs`` (every
# BLINDSPOT_JOB_SWEEP_S) re-runs or fails the jobs silent for BLINDSPOT_JOB_LOST_AFTER_S (so within
# 2 minutes of a worker's death), and a delivery whose Celery id is not the Job's ``attempt_token``,
# or whose job beats elsewhere, is dropped. The timeout then only bounds how late a message taken by
# a dead worker before it started comes back; it stays above the longest retry countdown (300 s): a
# shorter one would hand out countdown messages twice.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT_S", default=3600)
}
# Messages with no route go here (the beat's tasks and re-runs included): separate
# installations sharing one Redis database each name their own.
CELERY_TASK_DEFAULT_QUEUE = env.str("CELERY_TASK_DEFAULT_QUEUE", default="celery")
# Job kinds sent to a queue of their own, "kind=queue,…" (BLINDSPOT_JOB_QUEUES=hunt.ask=hunt):
# short, network-bound jobs such as a hunt's model calls, for a worker with a threads pool.
CELERY_TASK_ROUTES = {
    kind.strip(): {"queue": queue.strip()}
    for kind, _sep, queue in (
        item.partition("=") for item in env.list("BLINDSPOT_JOB_QUEUES", default=[])
    )
    if kind.strip() and queue.strip()
}
# Jobs wake the pages that wait on them through Redis (annotator.platform.wakeups); unset: the
# broker's URL when it is Redis and jobs are not eager; empty: pages poll on a timer.
BLINDSPOT_WAKEUPS_URL = env.str("BLINDSPOT_WAKEUPS_URL", default=None)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Database connections in a worker live as in a web process (CONN_MAX_AGE, closed when broken:
# blindspot/celery.py). Without this Celery's Django fixup closes every connection before and
# after each task, and each job paid a new connection (~5 ms on the hunt's critical path).
CELERY_DB_REUSE_MAX = 1_000_000
BLINDSPOT_JOB_HEARTBEAT_S = env.float("BLINDSPOT_JOB_HEARTBEAT_S", default=10.0)
BLINDSPOT_JOB_LOST_AFTER_S = env.float("BLINDSPOT_JOB_LOST_AFTER_S", default=60.0)
BLINDSPOT_JOB_SWEEP_S = env.float("BLINDSPOT_JOB_SWEEP_S", default=30.0)
BLINDSPOT_JOB_MAX_ATTEMPTS = env.int("BLINDSPOT_JOB_MAX_ATTEMPTS", default=3)
# Webhooks (``annotator.platform.webhooks``): a delivery waits at most TIMEOUT seconds for an
# answer, is tried up to MAX_ATTEMPTS times with exponential backoff (BACKOFF_S, then doubling,
# at most BACKOFF_MAX_S), and a hook whose last DISABLE_AFTER attempts all failed is disabled
# until a curator enables it again. URLs resolving to private, loopback, link-local or other
# non-public addresses are refused unless ALLOW_PRIVATE is set (a receiver inside your network).
BLINDSPOT_WEBHOOK_TIMEOUT_S = env.float("BLINDSPOT_WEBHOOK_TIMEOUT_S", default=5.0)
BLINDSPOT_WEBHOOK_MAX_ATTEMPTS = env.int("BLINDSPOT_WEBHOOK_MAX_ATTEMPTS", default=6)
BLINDSPOT_WEBHOOK_BACKOFF_S = env.float("BLINDSPOT_WEBHOOK_BACKOFF_S", default=30.0)
BLINDSPOT_WEBHOOK_BACKOFF_MAX_S = env.float("BLINDSPOT_WEBHOOK_BACKOFF_MAX_S", default=1800.0)
BLINDSPOT_WEBHOOK_DISABLE_AFTER = env.int("BLINDSPOT_WEBHOOK_DISABLE_AFTER", default=10)
BLINDSPOT_WEBHOOK_ALLOW_PRIVATE = env.bool("BLINDSPOT_WEBHOOK_ALLOW_PRIVATE", default=False)
BLINDSPOT_WEBHOOK_LOG_DAYS = env.int("BLINDSPOT_WEBHOOK_LOG_DAYS", default=30)
# A delivery still waiting this long after it was due lost its message: the beat queues it again.
BLINDSPOT_WEBHOOK_SWEEP_S = env.int("BLINDSPOT_WEBHOOK_SWEEP_S", default=120)
CELERY_BEAT_SCHEDULE = {
    "expire-leases": {"task": "annotator.expire_leases", "schedule": timedelta(seconds=30)},
    "sweep-lost-jobs": {
        "task": "annotator.sweep_lost_jobs",
        "schedule": timedelta(seconds=BLINDSPOT_JOB_SWEEP_S),
        # Not queued behind a stopped worker: the next sweep does the same work.
        "options": {"expires": BLINDSPOT_JOB_SWEEP_S},
    },
    "sweep-webhooks": {
        "task": "annotator.sweep_webhooks",
        "schedule": timedelta(seconds=60),
        "options": {"expires": 60},
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="WARNING")},
    # A line for every model call at INFO (a Celery worker's usual level), written in the call's
    # own thread before it returns: the gateway records every call as a Generation already.
    "loggers": {name: {"level": "WARNING"} for name in ("httpx", "httpx2", "httpcore")},
}


def _s3_hosts(options: dict) -> list[str]:
    """The origins an S3-compatible bucket's URLs use: custom domain, endpoint, or AWS's names."""
    if options["custom_domain"]:
        return [f"https://{options['custom_domain']}"]
    if options["endpoint_url"]:
        url = urlsplit(options["endpoint_url"])
        return [f"{url.scheme}://{url.netloc}"]
    bucket, region = options["bucket_name"], options["region_name"]
    hosts = [f"https://{bucket}.s3.amazonaws.com"]
    if region:
        hosts += [
            f"https://{bucket}.s3.{region}.amazonaws.com",
            f"https://s3.{region}.amazonaws.com",
        ]
    return hosts


# --- Curation: image assets, corpora, scorers and the LLM gateway ---------------------------
# S3-compatible media storage (AWS, MinIO, R2, …) when a bucket is named; local disk otherwise.
# Where media URLs point, for the CSP's img-src: the app itself, or the bucket's host.
MEDIA_HOSTS: list[str] = []
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
            # Signature V4 (V2 is refused by newer AWS regions); exports' signed URLs use it.
            "signature_version": env.str("AWS_S3_SIGNATURE_VERSION", default="s3v4"),
            "file_overwrite": True,  # names are content hashes: same name, same bytes
            "default_acl": None,
        },
    }
    MEDIA_HOSTS = _s3_hosts(STORAGES["default"]["OPTIONS"])
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],  # style attributes too: bars are classes (templatetags/bars.py)
        "img-src": ["'self'", "data:", *MEDIA_HOSTS, *CSP_IMG_HOSTS],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
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
# Protected files (platform/files.py): after the permission check, local files are handed to
# the web server by an internal redirect ("x-accel": nginx, an `internal` location at
# BLINDSPOT_PROTECTED_MEDIA_PREFIX aliased to MEDIA_ROOT; "x-sendfile": Apache / lighttpd) or,
# when empty, streamed by Django; S3 files by a signed URL valid BLINDSPOT_SIGNED_URL_EXPIRE_S.
BLINDSPOT_PROTECTED_MEDIA_REDIRECT = env.str("BLINDSPOT_PROTECTED_MEDIA_REDIRECT", default="")
if BLINDSPOT_PROTECTED_MEDIA_REDIRECT not in ("", "x-accel", "x-sendfile"):
    from django.core.exceptions import ImproperlyConfigured

    raise ImproperlyConfigured(
        "BLINDSPOT_PROTECTED_MEDIA_REDIRECT must be empty, x-accel (nginx) or x-sendfile."
    )
BLINDSPOT_PROTECTED_MEDIA_PREFIX = env.str(
    "BLINDSPOT_PROTECTED_MEDIA_PREFIX", default="/_protected/"
)
BLINDSPOT_SIGNED_URL_EXPIRE_S = env.int("BLINDSPOT_SIGNED_URL_EXPIRE_S", default=300)
BLINDSPOT_EMBEDDINGS_DIR = Path(
    env.str("BLINDSPOT_EMBEDDINGS_DIR", default=str(VAR_DIR / "embeddings"))
)
# Corpus scale (curation.embedding_chunks, curation.mining_chunks): an embedding job is cut into
# chunk jobs of this many items of one modality, an exact mining into this many chunk jobs of
# block pairs (blocks of BLINDSPOT_MINING_BLOCK rows); any worker takes them (route them with
# BLINDSPOT_JOB_QUEUES, e.g. "curation.embed_chunk=gpu"). A mining chunk sweeps with this many
# threads (0: one per core; 1 when several workers share the cores).
BLINDSPOT_EMBED_CHUNK_ITEMS = env.int("BLINDSPOT_EMBED_CHUNK_ITEMS", default=2048)
BLINDSPOT_MINING_CHUNKS = env.int("BLINDSPOT_MINING_CHUNKS", default=8)
BLINDSPOT_MINING_THREADS = env.int("BLINDSPOT_MINING_THREADS", default=0)
BLINDSPOT_MINING_BLOCK = env.int("BLINDSPOT_MINING_BLOCK", default=2048)  # rows of a block
# Embedding chunk files also on the media storage, read back by the job that fanned them out
# (curation.embedding_storage): workers on other machines. On by default with S3.
BLINDSPOT_EMBEDDINGS_SHARED = env.bool(
    "BLINDSPOT_EMBEDDINGS_SHARED", default=bool(env.str("AWS_STORAGE_BUCKET_NAME", default=""))
)
# The mining page's cost model (curation.mining_cost), from benchmarks/scale.py: one worker's
# seconds per GFLOP of float32 products (exact mining; ~100 GFLOP/s a core on a quiet machine),
# approximate mining's seconds per sample and scorer at BLINDSPOT_APPROX_COST_N samples and their
# growth with N (N^growth), and its recall of the exact mismatches measured at
# BLINDSPOT_APPROX_RECALL_N samples. Defaults: the 2-core reference machine, quiet (81 GFLOP/s a
# worker; approximate, one worker on both cores: 76.9 s at N = 100,000 with recall 1.0000 of the
# exact miner's 2,000 mismatches, 1,425 s at N = 1,000,000: 1.425 ms a sample, growth 0.268);
# set the figures it measures on yours.
BLINDSPOT_MINING_S_PER_GFLOP = env.float("BLINDSPOT_MINING_S_PER_GFLOP", default=0.0123)
BLINDSPOT_APPROX_S_PER_SAMPLE = env.float("BLINDSPOT_APPROX_S_PER_SAMPLE", default=0.001425)
BLINDSPOT_APPROX_COST_N = env.int("BLINDSPOT_APPROX_COST_N", default=1_000_000)
BLINDSPOT_APPROX_GROWTH = env.float("BLINDSPOT_APPROX_GROWTH", default=0.268)
BLINDSPOT_APPROX_RECALL = env.float("BLINDSPOT_APPROX_RECALL", default=1.0)
BLINDSPOT_APPROX_RECALL_N = env.int("BLINDSPOT_APPROX_RECALL_N", default=100_000)
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
