"""WSGI entry point: ``gunicorn wsgi:app`` serves the instance named by ``$HOSTCORE_INSTANCE``
(default ``./instance``). ``hostcore serve`` does the same with sensible gunicorn settings."""

from hostcore.app import serving_app

app = serving_app()
