"""SOLAR tools."""
