from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo workspace that `make run` loads (`demo_setup`)."""

    name = "demo"
    verbose_name = "Demo workspace"
