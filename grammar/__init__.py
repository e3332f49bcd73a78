"""SOLAR grammar."""
