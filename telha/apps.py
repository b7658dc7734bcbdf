"""The project itself as an app, for the commands that run the whole product
(`serve_all`, what `make run` starts): they belong to no domain app."""

from django.apps import AppConfig


class ProjectConfig(AppConfig):
    name = "telha"
    label = "telha"
    verbose_name = "Telha clarify (project)"
