"""Chat hooks (CONTRACT §3.5). Each hook verifies its request before anything else."""

from django.urls import path

urlpatterns: list = []
