"""Advice: typed findings become ranked remedies for the user's scenario."""
