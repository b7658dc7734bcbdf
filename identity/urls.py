"""/scim/v2/ (CONTRACT §3.7) and /sso/<tenant>/ (CONTRACT §3.8)."""

from django.urls import path, re_path

from . import scim_views as v
from . import sso

scim_v2 = [
    path(".search", v.RootSearchView.as_view()),
    re_path(r"^ServiceProviderConfig/?$", v.ServiceProviderConfigView.as_view()),
    re_path(r"^ResourceTypes/?$", v.ResourceTypesView.as_view()),
    path("ResourceTypes/<str:doc_id>", v.ResourceTypesView.as_view()),
    re_path(r"^Schemas/?$", v.SchemasView.as_view()),
    path("Schemas/<str:doc_id>", v.SchemasView.as_view()),
    re_path(r"^Users/?$", v.UsersView.as_view(), name="scim-users"),
    path("Users/.search", v.UsersView.as_view(), {"search": True}),
    path("Users/<str:res_id>", v.UsersView.as_view(), name="scim-user"),
    re_path(r"^Groups/?$", v.GroupsView.as_view(), name="scim-groups"),
    path("Groups/.search", v.GroupsView.as_view(), {"search": True}),
    path("Groups/<str:res_id>", v.GroupsView.as_view(), name="scim-group"),
]

sso_urls = [
    path("<slug:tenant>/login/", sso.sso_login, name="sso-login"),
    path("<slug:tenant>/callback/", sso.sso_callback, name="sso-callback"),
]
