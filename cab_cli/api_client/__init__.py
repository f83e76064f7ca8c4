
""" A client library for accessing Cognitive Atrophy Bench API """
from .client import AuthenticatedClient, Client

__all__ = (
    "AuthenticatedClient",
    "Client",
)
