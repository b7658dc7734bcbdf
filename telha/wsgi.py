"""WSGI entry point (gunicorn telha.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "telha.settings")
application = get_wsgi_application()
