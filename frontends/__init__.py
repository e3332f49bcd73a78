"""SOLAR frontends."""
