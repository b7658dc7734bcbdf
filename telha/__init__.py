"""Telha clarify: the Django project and its core apps."""
