"""OpenAPI description of the bearer-key authentication."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "tenancy.auth.ApiKeyAuthentication"
    name = "bearerKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "An API key or service token."}
