"""SOLAR targets."""
