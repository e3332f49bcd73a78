"""SOLAR backends."""
